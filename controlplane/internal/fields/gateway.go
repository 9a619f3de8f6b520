package fields

import (
	"reflect"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
)

// Kinds of the Gateway API objects whose fields are classified, as in
// status refs.
const (
	KindGatewayClass   = "GatewayClass"
	KindGateway        = "Gateway"
	KindHTTPRoute      = "HTTPRoute"
	KindGRPCRoute      = "GRPCRoute"
	KindTLSRoute       = "TLSRoute"
	KindTCPRoute       = "TCPRoute"
	KindUDPRoute       = "UDPRoute"
	KindListenerSet    = "ListenerSet"
	KindReferenceGrant = "ReferenceGrant"
	KindExtAuthPolicy  = "ExtAuthPolicy"
	KindExtProcPolicy  = "ExtProcPolicy"
)

// GatewayKinds are the Gateway API kinds portcullis serves (upstream's and
// gateway.portcullis.dev's policies), with their spec types. Unlike the
// projectcontour.io kinds, the builder does not refuse their fields from
// the table: it checks the fields it does not implement by hand, each with
// its own condition, and the table (gateway_table.go) says what it does,
// for completeness and for docs/gateway-api-fields.md.
var GatewayKinds = []struct {
	Kind string
	Spec reflect.Type
}{
	{KindGatewayClass, reflect.TypeFor[gwapiv1.GatewayClassSpec]()},
	{KindGateway, reflect.TypeFor[gwapiv1.GatewaySpec]()},
	{KindHTTPRoute, reflect.TypeFor[gwapiv1.HTTPRouteSpec]()},
	{KindGRPCRoute, reflect.TypeFor[gwapiv1.GRPCRouteSpec]()},
	{KindTLSRoute, reflect.TypeFor[gwapiv1.TLSRouteSpec]()},
	{KindTCPRoute, reflect.TypeFor[gwapiv1.TCPRouteSpec]()},
	{KindUDPRoute, reflect.TypeFor[gwapiv1.UDPRouteSpec]()},
	{KindListenerSet, reflect.TypeFor[gwapiv1.ListenerSetSpec]()},
	{KindReferenceGrant, reflect.TypeFor[gwapiv1.ReferenceGrantSpec]()},
	{KindExtAuthPolicy, reflect.TypeFor[gatewayv1alpha1.ExtAuthPolicySpec]()},
	{KindExtProcPolicy, reflect.TypeFor[gatewayv1alpha1.ExtProcPolicySpec]()},
}

// gatewayAPIPackage is the module of the upstream Gateway API types: its
// structs are walked into like ours.
const gatewayAPIPackage = "sigs.k8s.io/gateway-api/"

func isGatewayAPIType(t reflect.Type) bool {
	return strings.HasPrefix(t.PkgPath(), gatewayAPIPackage) || isAPIType(t)
}

// GatewayPaths lists every field path of a Gateway API spec type, in the
// order of the type's fields, depth first: what the Gateway API table
// must cover. Structs of other modules (a metav1.LabelSelector) are
// leaves.
func GatewayPaths(spec reflect.Type) []Field {
	var out []Field
	walkGatewayType(spec, "spec", map[reflect.Type]bool{}, &out)
	return out
}

func walkGatewayType(t reflect.Type, pattern string, onPath map[reflect.Type]bool, out *[]Field) {
	t = elemType(t)
	if t.Kind() != reflect.Struct || !isGatewayAPIType(t) || onPath[t] {
		return
	}
	onPath[t] = true
	defer delete(onPath, t)
	for _, f := range apiFields(t) {
		pat := pattern + "." + f.name
		*out = append(*out, Field{Pattern: pat, Type: f.typ})
		walkGatewayType(f.typ, pat, onPath, out)
	}
}

// ImplementedExcept is an implemented Gateway API field some values of
// which the builder refuses: note says which it takes, and what it does
// with the others.
func ImplementedExcept(note string) Support { return Support{implemented: true, why: note} }

// Ignored is a Gateway API field the builder reads nothing of: an object
// setting it is served as if it were unset. why says why that is safe.
func Ignored(why string) Support { return Support{ignored: true, why: why} }

// IsIgnored reports whether the field is ignored.
func (s Support) IsIgnored() bool { return s.ignored }

// GatewayLookup returns the support of a field path pattern of a Gateway
// API kind (see Lookup). ok is false for a path the table lacks.
func GatewayLookup(kind, pattern string) (s Support, ok bool) {
	s, ok = gatewayTable[kind][pattern]
	return s, ok
}

// GatewaySpecType returns the spec type of a Gateway API kind (nil for
// another kind).
func GatewaySpecType(kind string) reflect.Type {
	for _, k := range GatewayKinds {
		if k.Kind == kind {
			return k.Spec
		}
	}
	return nil
}

// GatewayRows lists the field paths of a Gateway API kind that the table
// must classify, in the order of the types: every path of its spec type
// except those under a refused or ignored field (which go with it).
func GatewayRows(kind string) []Row {
	return rows(GatewayPaths(GatewaySpecType(kind)), func(pattern string) (Support, bool) { return GatewayLookup(kind, pattern) })
}

// GatewaySetPatterns lists the path patterns of every field that a
// Gateway API spec sets (see SetPatterns).
func GatewaySetPatterns(spec any) []string { return setPatterns(spec, isGatewayAPIType) }
