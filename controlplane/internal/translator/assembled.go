package translator

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// A shared route configuration (ingress_http: every plaintext host) is
// sent whole on every change of any of its hosts, and encoding it is most
// of publishing such a change. Its encoding is assembled instead from the
// encodings of its hosts' routes, which routeConfig keeps with the routes
// (routesKey, reused with them from one translation to the next): the
// encoding of a repeated field is the concatenation of its elements', and
// proto's deterministic encoding writes fields in number order. The
// result is byte for byte proto's deterministic encoding
// (TestAssembledIsTheEncoding), which the xDS server hashes and sends
// (Resources.Encoded).

// Field numbers of what assembled writes itself.
const (
	routeConfigNameField         = 1 // RouteConfiguration.name
	routeConfigVirtualHostsField = 2 // RouteConfiguration.virtual_hosts
	virtualHostNameField         = 1 // VirtualHost.name
	virtualHostDomainsField      = 2 // VirtualHost.domains
)

// assembled is rc's deterministic encoding, made with routeBytes, the
// encodings of the routes of rc.VirtualHosts (routeConfig's); false when
// one is missing. A virtual host has only the fields routeConfig sets:
// name, domains, routes, rate_limits and typed_per_filter_config.
func assembled(rc *routev3.RouteConfiguration, routeBytes []string) ([]byte, bool) {
	if len(routeBytes) != len(rc.VirtualHosts) || len(routeBytes) == 0 {
		return nil, false
	}
	// The fields other than the virtual hosts: the name first, the others
	// (numbered above the virtual hosts) after them.
	rest := rc.ProtoReflect().New()
	rc.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Number() != routeConfigVirtualHostsField {
			rest.Set(fd, v)
		}
		return true
	})
	other, err := proto.MarshalOptions{Deterministic: true}.Marshal(rest.Interface())
	if err != nil {
		return nil, false
	}
	name := 0
	if rc.Name != "" {
		name = protowire.SizeTag(routeConfigNameField) + protowire.SizeBytes(len(rc.Name))
	}
	size := len(other)
	sizes, extras := make([]int, len(routeBytes)), make([][]byte, len(routeBytes))
	for i, v := range rc.VirtualHosts {
		if len(routeBytes[i]) > 0 && routeBytes[i][0] != protowireRoutesTag {
			return nil, false // no encoding (routesKey)
		}
		var ok bool
		if extras[i], ok = vhostExtra(v); !ok {
			return nil, false
		}
		sizes[i] = vhostSize(v, routeBytes[i]) + len(extras[i])
		size += protowire.SizeTag(routeConfigVirtualHostsField) + protowire.SizeBytes(sizes[i])
	}
	b := make([]byte, 0, size)
	b = append(b, other[:name]...)
	for i, v := range rc.VirtualHosts {
		b = protowire.AppendTag(b, routeConfigVirtualHostsField, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizes[i])) //nolint:gosec // a size, never negative
		b = appendString(b, virtualHostNameField, v.Name)
		for _, d := range v.Domains {
			b = appendString(b, virtualHostDomainsField, d)
		}
		b = append(b, routeBytes[i]...)
		b = append(b, extras[i]...)
	}
	return append(b, other[name:]...), true
}

// protowireRoutesTag is the first byte of an encoding of
// VirtualHost.routes (field 3, length-delimited).
const protowireRoutesTag = 3<<3 | byte(protowire.BytesType)

// vhostSize is the size of v's name, domains and routes, whose routes
// encode as routes.
func vhostSize(v *routev3.VirtualHost, routes string) int {
	n := len(routes)
	if v.Name != "" {
		n += protowire.SizeTag(virtualHostNameField) + protowire.SizeBytes(len(v.Name))
	}
	for _, d := range v.Domains {
		n += protowire.SizeTag(virtualHostDomainsField) + protowire.SizeBytes(len(d))
	}
	return n
}

// vhostExtra encodes v's fields numbered after its routes that
// routeConfig sets (rate_limits, typed_per_filter_config); nil for none.
func vhostExtra(v *routev3.VirtualHost) ([]byte, bool) {
	if v.RateLimits == nil && v.TypedPerFilterConfig == nil {
		return nil, true
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&routev3.VirtualHost{RateLimits: v.RateLimits, TypedPerFilterConfig: v.TypedPerFilterConfig})
	return b, err == nil
}

func appendString(b []byte, field protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendString(b, s)
}
