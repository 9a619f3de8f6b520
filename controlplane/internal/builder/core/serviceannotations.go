package core

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// What a Service asks of the clusters of its ports through Contour's
// annotations, the same for HTTPProxies' and Gateway API routes'
// backends, as in Contour (one Service processing for both):
//
//   - projectcontour.io/upstream-protocol.{h2,h2c,tls}: a comma-separated
//     list of the Service's port names or numbers whose clusters speak
//     HTTP/2 over TLS, HTTP/2 cleartext or HTTP/1.1 over TLS. A port's
//     appProtocol, when set, wins over them (Contour's rule); a route's
//     own protocol (an HTTPProxy service's protocol) wins over both.
//   - projectcontour.io/max-connections, max-pending-requests,
//     max-requests, max-retries, per-host-max-connections: the circuit
//     breaker thresholds of every cluster of the Service (0 leaves
//     Envoy's default, as in Contour).
//
// Where Contour ignores what it cannot read (a value that is not a
// number is 0, a port name that is not the Service's is never looked
// up, an annotation of its namespace it does not know is only logged),
// Portcullis refuses the Service, naming the annotation: a Service
// served otherwise than its annotations say would, for upstream-protocol
// tls, send plaintext to a backend meant to be reached over TLS.

// annotationPrefix is Contour's annotation namespace.
const annotationPrefix = "projectcontour.io/"

// The upstream protocol annotations, in Contour's order.
var upstreamProtocolAnnotations = [...]struct {
	key      string
	protocol ir.Protocol
}{
	{annotationPrefix + "upstream-protocol.h2", ir.H2},
	{annotationPrefix + "upstream-protocol.h2c", ir.H2C},
	{annotationPrefix + "upstream-protocol.tls", ir.TLS},
}

// The circuit breaker annotations and the limit each sets.
var circuitBreakerAnnotations = [...]struct {
	key   string
	limit func(*ir.CircuitBreakers) *uint32
}{
	{annotationPrefix + "max-connections", func(c *ir.CircuitBreakers) *uint32 { return &c.MaxConnections }},
	{annotationPrefix + "max-pending-requests", func(c *ir.CircuitBreakers) *uint32 { return &c.MaxPendingRequests }},
	{annotationPrefix + "max-requests", func(c *ir.CircuitBreakers) *uint32 { return &c.MaxRequests }},
	{annotationPrefix + "max-retries", func(c *ir.CircuitBreakers) *uint32 { return &c.MaxRetries }},
	{annotationPrefix + "per-host-max-connections", func(c *ir.CircuitBreakers) *uint32 { return &c.PerHostMaxConnections }},
}

// Upstream is what a Service port's annotations (and appProtocol) ask of
// its clusters.
type Upstream struct {
	// Protocol is the port's protocol (HTTP/1.1 when nothing names one);
	// a route's own protocol, where it has one, wins over it.
	Protocol ir.Protocol
	// CircuitBreakers are the Service's limits; nil for Envoy's defaults.
	CircuitBreakers *ir.CircuitBreakers
}

// AnnotationError is a Service annotation that cannot be applied; Reason
// is status.ReasonServiceAnnotationNotSupported or
// status.ReasonServiceAnnotationInvalid.
type AnnotationError struct {
	Reason string
	msg    string
}

func (e *AnnotationError) Error() string { return e.msg }

// ServiceUpstream reads what backend be's Service asks of the clusters of
// its port; an error when one of its projectcontour.io annotations is not
// supported or not valid. A Service without
// annotations costs no allocation.
func ServiceUpstream(be *Backend) (Upstream, *AnnotationError) {
	up := Upstream{Protocol: appProtocol(be.Port)}
	cb, err := circuitBreakersOf(be.Service)
	if err != nil {
		return Upstream{}, err
	}
	up.CircuitBreakers = cb
	p, key, err := annotatedProtocol(be.Service, be.Port)
	switch {
	case err != nil:
		return Upstream{}, err
	case key == "":
	case be.Port.AppProtocol != nil && p != up.Protocol:
		// Contour reads the appProtocol only and ignores the annotation:
		// one of them would not be applied.
		return Upstream{}, &AnnotationError{status.ReasonServiceAnnotationInvalid, fmt.Sprintf("annotation %s names port %s, whose appProtocol %q asks for %s: remove one of them", key, portName(be.Port), *be.Port.AppProtocol, protocolName(up.Protocol))}
	default:
		up.Protocol = p
	}
	return up, nil
}

// circuitBreakersOf checks every projectcontour.io annotation of svc and
// reads its circuit breakers (nil for none); of several wrong
// annotations, the first by name is reported, so that the message does
// not change from one build to the next.
func circuitBreakersOf(svc *corev1.Service) (*ir.CircuitBreakers, *AnnotationError) {
	var out *ir.CircuitBreakers
	var errKey string
	var firstErr *AnnotationError
	for key, value := range svc.Annotations {
		if !strings.HasPrefix(key, annotationPrefix) || (firstErr != nil && key > errKey) {
			continue
		}
		if err := checkAnnotation(svc, key, value, &out); err != nil {
			errKey, firstErr = key, err
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// checkAnnotation checks annotation key of Contour's namespace and sets
// the circuit breaker limit it names in *cb (allocated on first use).
func checkAnnotation(svc *corev1.Service, key, value string, cb **ir.CircuitBreakers) *AnnotationError {
	if isUpstreamProtocolAnnotation(key) {
		return checkPortList(svc, key, value)
	}
	limit := circuitBreakerLimit(key)
	if limit == nil {
		return &AnnotationError{status.ReasonServiceAnnotationNotSupported, fmt.Sprintf("annotation %s is not supported (Portcullis implements %s)", key, supportedAnnotations)}
	}
	v, err := strconv.ParseUint(strings.TrimSpace(value), 10, 32)
	if err != nil {
		return &AnnotationError{status.ReasonServiceAnnotationInvalid, fmt.Sprintf("annotation %s: %q is not a number from 0 to %d", key, value, uint32(1<<32-1))}
	}
	if v == 0 {
		return nil // Envoy's default, as in Contour
	}
	if *cb == nil {
		*cb = &ir.CircuitBreakers{}
	}
	*limit(*cb) = uint32(v)
	return nil
}

// supportedAnnotations lists the annotations ServiceUpstream reads, for
// its message.
const supportedAnnotations = "projectcontour.io/upstream-protocol.h2, .h2c, .tls, max-connections, max-pending-requests, max-requests, max-retries and per-host-max-connections"

func isUpstreamProtocolAnnotation(key string) bool {
	for _, a := range upstreamProtocolAnnotations {
		if a.key == key {
			return true
		}
	}
	return false
}

func circuitBreakerLimit(key string) func(*ir.CircuitBreakers) *uint32 {
	for _, a := range circuitBreakerAnnotations {
		if a.key == key {
			return a.limit
		}
	}
	return nil
}

// checkPortList refuses an upstream-protocol annotation naming a port the
// Service does not have (an ExternalName Service's port may be any port
// number: it often lists none).
func checkPortList(svc *corev1.Service, key, value string) *AnnotationError {
	for rest := value; rest != ""; {
		var entry string
		entry, rest, _ = strings.Cut(rest, ",")
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if !hasPort(svc, entry) {
			return &AnnotationError{status.ReasonServiceAnnotationInvalid, fmt.Sprintf("annotation %s: %q is not the name or number of a port of the Service", key, entry)}
		}
	}
	return nil
}

func hasPort(svc *corev1.Service, entry string) bool {
	n, err := strconv.Atoi(entry)
	for _, sp := range svc.Spec.Ports {
		if sp.Name == entry || (err == nil && int(sp.Port) == n) {
			return true
		}
	}
	return svc.Spec.Type == corev1.ServiceTypeExternalName && err == nil && n >= 1 && n <= maxPort
}

// annotatedProtocol is the protocol the upstream-protocol annotations
// give port sp (by name or number), and the annotation that gives it (""
// for none). Contour looks the port's name up before its number, and of
// two annotations naming it the later wins: a port named by two
// protocols is refused instead.
func annotatedProtocol(svc *corev1.Service, sp corev1.ServicePort) (ir.Protocol, string, *AnnotationError) {
	if len(svc.Annotations) == 0 {
		return ir.HTTP1, "", nil
	}
	protocol, key := ir.HTTP1, ""
	for _, a := range upstreamProtocolAnnotations {
		value, ok := svc.Annotations[a.key]
		if !ok || !namesPort(value, sp) {
			continue
		}
		if key != "" {
			return "", "", &AnnotationError{status.ReasonServiceAnnotationInvalid, fmt.Sprintf("annotations %s and %s both name port %s: name it in one", key, a.key, portName(sp))}
		}
		protocol, key = a.protocol, a.key
	}
	return protocol, key, nil
}

// namesPort tells whether the list of port names and numbers value names
// port sp.
func namesPort(value string, sp corev1.ServicePort) bool {
	for rest := value; rest != ""; {
		var entry string
		entry, rest, _ = strings.Cut(rest, ",")
		entry = strings.TrimSpace(entry)
		if entry != "" && (entry == sp.Name || entry == strconv.Itoa(int(sp.Port))) {
			return true
		}
	}
	return false
}

// appProtocol is the protocol a Service port's appProtocol names, as in
// Contour: kubernetes.io/h2c is HTTP/2 cleartext, https HTTP/1.1 over
// TLS; others (http, kubernetes.io/ws, or none) HTTP/1.1.
func appProtocol(sp corev1.ServicePort) ir.Protocol {
	switch PtrValue(sp.AppProtocol) {
	case "kubernetes.io/h2c":
		return ir.H2C
	case "https":
		return ir.TLS
	}
	return ir.HTTP1
}

func portName(sp corev1.ServicePort) string {
	if sp.Name != "" {
		return sp.Name
	}
	return strconv.Itoa(int(sp.Port))
}

func protocolName(p ir.Protocol) string {
	if p == ir.HTTP1 {
		return "HTTP/1.1"
	}
	return string(p)
}
