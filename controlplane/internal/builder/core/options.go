package core

import (
	"cmp"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Options are the control plane's settings that shape the build.
type Options struct {
	// RootNamespaces, when not empty, are the only namespaces where root
	// HTTPProxies (with a virtualhost) may live.
	RootNamespaces []string
	// IngressClassName selects the HTTPProxies this control plane serves:
	// those with this class, and those with none.
	IngressClassName string
	// FallbackCertificate is the Secret ("namespace/name") served to
	// clients without SNI by virtual hosts that enable it.
	FallbackCertificate string
	// ExternalNameServices lets routes and ExternalName Services send
	// traffic to the Service's DNS name. Off by default: a tenant could
	// otherwise point Envoy anywhere its network reaches.
	ExternalNameServices bool
	// LoopbackExternalNames also allows ExternalName Services that name this
	// host (localhost, 127.0.0.0/8, ::1), which can reach Envoy's own admin
	// interface. Only for tests and local development.
	LoopbackExternalNames bool
	// GlobalExtAuth and GlobalExtProc come from the configuration file
	// (internal/config), already checked there.
	GlobalExtAuth *config.GlobalExtAuth
	GlobalExtProc *contourv1.ExternalProcessor
	// RateLimitService is the global rate limit service (configuration
	// file, already checked there).
	RateLimitService *config.RateLimitService
	// Limits bound each root's include expansion (zeros: the defaults).
	Limits config.Limits
	// GatewayControllerName selects the GatewayClasses this control plane
	// serves (those whose spec.controllerName it is), and with them their
	// Gateways and the routes attached to those; empty for
	// config.DefaultGatewayControllerName.
	GatewayControllerName string
	// HTTP and HTTPS are where Envoy's shared HTTP and HTTPS listeners
	// bind, which serve the HTTPProxies: a Gateway listener on one of
	// their ports adds its hosts to that listener instead of getting its
	// own (port 0: none does). Gateway listeners of ports of their own bind
	// their address.
	HTTP, HTTPS Bind
	// EnvoyAddresses and EnvoyService ("namespace/name") say where
	// clients reach Envoy (config.Gateway): every Gateway's
	// status.addresses and every served root HTTPProxy's
	// status.loadBalancer (envoyaddresses.go).
	EnvoyAddresses []string
	EnvoyService   string
	// GatewayServicePerGateway gives each Gateway its own Envoy ports and
	// Service (config.Gateway.ServicePerGateway, gatewayservices.go).
	GatewayServicePerGateway bool
	// GatewayExperimentalChannel: the Gateway API CRDs are the
	// experimental channel's (config.Gateway.ExperimentalChannel).
	GatewayExperimentalChannel bool
	// UDPSessionIdleTimeout closes the sessions of Gateways' UDP
	// listeners (config.Gateway.UDPIdleTimeout); 0 is the default.
	UDPSessionIdleTimeout time.Duration
	// Extensions are the kinds the extension servers registered.
	Extensions ExtensionKinds
	// SystemCA is the PEM bundle of the system's trust roots
	// (--system-ca-file, read by the command, not here): servers of https
	// URIs without a CA of their own (remoteJWKS without validation) are
	// verified against it, shared as one SDS secret (SystemCASecretName).
	// Empty: such URIs are refused.
	SystemCA []byte
}

// UDPIdleTimeout is the idle timeout of UDP sessions in force.
func (o *Options) UDPIdleTimeout() time.Duration {
	return cmp.Or(o.UDPSessionIdleTimeout, config.DefaultUDPSessionIdleTimeout)
}

// Bind is where a listener binds.
type Bind struct {
	Address string
	Port    uint32
}

// DefaultListeners are the shared listeners' binds when no flag says:
// all addresses, ports 8080 and 8443.
func DefaultListeners() (http, https Bind) {
	return Bind{"0.0.0.0", 8080}, Bind{"0.0.0.0", 8443}
}

// WithConfig returns o with the settings of the configuration file.
func (o Options) WithConfig(c *config.Config) Options {
	o.GlobalExtAuth, o.GlobalExtProc, o.Limits = c.GlobalExtAuth, c.GlobalExtProc, c.Limits
	if c.GlobalExtAuth != nil && c.GlobalExtAuth.Disabled {
		// globalExtAuth: {disabled: true} is no global authorization.
		o.GlobalExtAuth = nil
	}
	o.RateLimitService = c.RateLimitService
	o.GatewayControllerName = c.Gateway.Controller()
	o.EnvoyAddresses, o.EnvoyService = c.Gateway.Addresses, c.Gateway.EnvoyService
	o.GatewayServicePerGateway = c.Gateway.ServicePerGateway
	o.GatewayExperimentalChannel = c.Gateway.ExperimentalChannel
	o.UDPSessionIdleTimeout = c.Gateway.UDPIdleTimeout()
	o.Extensions = extensionKindsOf(c)
	return o
}

// Kinds, as they appear in status references.
const (
	KindHTTPProxy                = objects.KindHTTPProxy
	KindExtensionService         = objects.KindExtensionService
	KindTLSCertificateDelegation = objects.KindTLSCertificateDelegation
)
