// Package statuswriter is the stage beside the xDS server: it puts the
// status the build computed for each object where users read it. Writers
// implement one interface: the Kubernetes writer (the status subresource,
// with conflict retries, only on change) and the log writer (file mode).
package statuswriter

import (
	"context"
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime/schema"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Writer receives the statuses of a build (all of them, or only those that
// changed since the last call).
type Writer interface {
	Write(ctx context.Context, updates []Update)
}

// Update is the status of one object. Exactly one of the status fields is
// set, the one of Ref.Kind.
type Update struct {
	Ref              objects.Ref
	HTTPProxy        *contourv1.HTTPProxyStatus
	ExtensionService *v1alpha1.ExtensionServiceStatus
	Delegation       *contourv1.TLSCertificateDelegationStatus

	// Gateway API statuses: only this controller's parts (conditions it
	// owns, route parents naming its controller); the writer keeps the rest.
	GatewayClass *gwapiv1.GatewayClassStatus
	Gateway      *gwapiv1.GatewayStatus
	HTTPRoute    *gwapiv1.HTTPRouteStatus
	GRPCRoute    *gwapiv1.GRPCRouteStatus
	TLSRoute     *gwapiv1.TLSRouteStatus
	TCPRoute     *gwapiv1.TCPRouteStatus
	UDPRoute     *gwapiv1.UDPRouteStatus
	ListenerSet  *gwapiv1.ListenerSetStatus

	// Policy statuses (gateway.portcullis.dev): only the ancestors naming
	// this controller, as for the Gateway API statuses above.
	ExtAuthPolicy *gwapiv1.PolicyStatus
	ExtProcPolicy *gwapiv1.PolicyStatus
	// BackendTLSPolicy: its ancestors naming this controller (other
	// implementations write theirs on the same policy).
	BackendTLSPolicy *gwapiv1.PolicyStatus
	// ExtensionPolicy is the status of a policy of a kind an extension
	// registered (ExtensionGVK): its ancestors naming this controller.
	// The rest of the object's status is the extension's and is kept.
	ExtensionPolicy *gwapiv1.PolicyStatus
	ExtensionGVK    schema.GroupVersionKind
}

// SetRoute sets the status of a route of any kind (by u.Ref.Kind): the
// route kinds' statuses are the same RouteStatus.
func (u *Update) SetRoute(st gwapiv1.RouteStatus) {
	switch u.Ref.Kind {
	case objects.KindHTTPRoute:
		u.HTTPRoute = &gwapiv1.HTTPRouteStatus{RouteStatus: st}
	case objects.KindGRPCRoute:
		u.GRPCRoute = &gwapiv1.GRPCRouteStatus{RouteStatus: st}
	case objects.KindTLSRoute:
		u.TLSRoute = &gwapiv1.TLSRouteStatus{RouteStatus: st}
	case objects.KindTCPRoute:
		u.TCPRoute = &gwapiv1.TCPRouteStatus{RouteStatus: st}
	case objects.KindUDPRoute:
		u.UDPRoute = &gwapiv1.UDPRouteStatus{RouteStatus: st}
	}
}

// APIVersion is the API version of the object's kind.
func (u Update) APIVersion() string {
	if u.ExtensionPolicy != nil {
		return u.ExtensionGVK.GroupVersion().String()
	}
	switch u.Ref.Kind {
	case objects.KindExtensionService:
		return v1alpha1.GroupVersion.String()
	case objects.KindGatewayClass, objects.KindGateway, objects.KindHTTPRoute, objects.KindGRPCRoute, objects.KindBackendTLSPolicy,
		objects.KindTLSRoute, objects.KindTCPRoute, objects.KindUDPRoute, objects.KindListenerSet:
		return gwapiv1.GroupVersion.String()
	case objects.KindExtAuthPolicy, objects.KindExtProcPolicy:
		return gatewayv1alpha1.GroupVersion.String()
	}
	return contourv1.GroupVersion.String()
}

// Status is the status that is set.
func (u Update) Status() any {
	switch {
	case u.HTTPProxy != nil:
		return u.HTTPProxy
	case u.ExtensionService != nil:
		return u.ExtensionService
	case u.Delegation != nil:
		return u.Delegation
	case u.GatewayClass != nil:
		return u.GatewayClass
	case u.Gateway != nil:
		return u.Gateway
	case u.ListenerSet != nil:
		return u.ListenerSet
	case u.ExtAuthPolicy != nil:
		return u.ExtAuthPolicy
	case u.ExtProcPolicy != nil:
		return u.ExtProcPolicy
	case u.BackendTLSPolicy != nil:
		return u.BackendTLSPolicy
	case u.ExtensionPolicy != nil:
		return u.ExtensionPolicy
	}
	return u.routeStatus()
}

// routeStatus is the status of a route that is set; nil for none.
func (u Update) routeStatus() any {
	switch {
	case u.HTTPRoute != nil:
		return u.HTTPRoute
	case u.GRPCRoute != nil:
		return u.GRPCRoute
	case u.TLSRoute != nil:
		return u.TLSRoute
	case u.TCPRoute != nil:
		return u.TCPRoute
	case u.UDPRoute != nil:
		return u.UDPRoute
	}
	return nil
}

// MarshalJSON renders an update as `portcullis translate` and the admin
// endpoint's /status show it.
func (u Update) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Namespace  string `json:"namespace"`
		Name       string `json:"name"`
		Status     any    `json:"status"`
	}{u.APIVersion(), u.Ref.Kind, u.Ref.Namespace, u.Ref.Name, u.Status()})
}
