package translator

import (
	"sync"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// Every TLS host has an HCM of its own, named after the host (its stat
// prefix and its route configuration), and most hosts' HCMs are otherwise
// the same: building and encoding each was 7% of a TLS build. chainParts
// encodes the rest of an HCM once per shape of settings and writes each
// host's HCM from its name, its RDS and that rest, in the order proto's
// deterministic encoding has: the fields outside oneofs by number, where
// the stat prefix (2) is the first an HCM has here (codec_type, 1, is AUTO,
// the default, never written), then the oneofs in the order they are
// declared, where RDS (route_specifier) is the first. The result is byte
// for byte hcmFilter's (TestHCMEncodingIsTheEncoding).

// Field numbers of what chainParts writes itself.
const (
	hcmStatPrefixField      = 2 // HttpConnectionManager.stat_prefix
	hcmRDSField             = 3 // HttpConnectionManager.rds
	rdsConfigSourceField    = 1 // Rds.config_source
	rdsRouteConfigNameField = 2 // Rds.route_config_name
)

var hcmTypeURL = "type.googleapis.com/" + string((&hcmv3.HttpConnectionManager{}).ProtoReflect().Descriptor().FullName())

// hcmRest is the encoding of an HCM without its stat prefix and RDS, cut
// where RDS goes: before the first field of a oneof.
type hcmRest struct{ fields, oneofs []byte }

// hcmShape is what of an HCM's settings its encoding depends on, for the
// settings shapeOf takes: comparable, with the authorization by value
// (each root has its own *ir.ExtAuth, naming the root as its origin,
// which is not in Envoy's configuration).
type hcmShape struct {
	auth                                            extAuthShape
	cookies, ipFilters, cors, rateLimits, keepPorts bool
	rateLimitService                                *ir.RateLimitService
	every                                           everyHCM
}

type extAuthShape struct {
	set                bool
	cluster, authority string
	timeout            time.Duration
	failOpen           bool
	body               ir.BufferSettings
	withBody           bool
}

// shapeOf is h's shape; false for settings an encoding is not shared for
// (a processor, route or JWT filters, client certificate forwarding, an
// HTTP authorization server: rarer, and each with more to compare).
func shapeOf(h hcmSettings) (hcmShape, bool) {
	if h.proc != nil || len(h.routeAuth) > 0 || len(h.routeProc) > 0 || len(h.jwt) > 0 || h.xfcc != nil || (h.auth != nil && h.auth.HTTP != nil) {
		return hcmShape{}, false
	}
	s := hcmShape{cookies: h.cookies, ipFilters: h.ipFilters, cors: h.cors, rateLimits: h.rateLimits, keepPorts: h.keepHostPort,
		rateLimitService: h.rateLimitService, every: h.everyHCM}
	if a := h.auth; a != nil {
		s.auth = extAuthShape{set: true, cluster: a.Cluster, authority: a.Authority, timeout: a.Timeout, failOpen: a.FailOpen}
		if a.WithRequestBody != nil {
			s.auth.body, s.auth.withBody = *a.WithRequestBody, true
		}
	}
	return s, true
}

// hcm is hcmFilter(name, name, h): a TLS host's HCM.
func (e *chainParts) hcm(name string, h hcmSettings) *listenerv3.Filter {
	shape, ok := shapeOf(h)
	if e == nil || !ok {
		return hcmFilter(name, name, h)
	}
	rest, ok := share(&e.mu, e.rest, shape, func() (hcmRest, bool) {
		hcm := hcmMessage("", "", h)
		hcm.RouteSpecifier = nil
		return restOf(hcm)
	})
	if !ok {
		return hcmFilter(name, name, h)
	}
	return &listenerv3.Filter{
		Name:       hcmFilterName,
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: &anypb.Any{TypeUrl: hcmTypeURL, Value: hcmEncoding(name, rest)}},
	}
}

// restOf encodes hcm (no stat prefix, no RDS) and cuts it before its
// first field of a oneof; false if it cannot be encoded.
func restOf(hcm *hcmv3.HttpConnectionManager) (hcmRest, bool) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(hcm)
	if err != nil {
		return hcmRest{}, false
	}
	fields := hcm.ProtoReflect().Descriptor().Fields()
	for at := 0; at < len(b); {
		num, typ, n := protowire.ConsumeTag(b[at:])
		if n < 0 {
			return hcmRest{}, false
		}
		if fd := fields.ByNumber(num); fd != nil && fd.ContainingOneof() != nil {
			return hcmRest{fields: b[:at], oneofs: b[at:]}, true
		}
		m := protowire.ConsumeFieldValue(num, typ, b[at+n:])
		if m < 0 {
			return hcmRest{}, false
		}
		at += n + m
	}
	return hcmRest{fields: b}, true
}

// adsConfigSourceEncoding is adsConfigSource's encoding.
var adsConfigSourceEncoding = sync.OnceValue(func() []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(adsConfigSource())
	if err != nil {
		panic(err)
	}
	return b
})

// hcmEncoding is the encoding of an HCM with stat prefix and route
// configuration name, whose other fields encode as rest.
func hcmEncoding(name string, rest hcmRest) []byte {
	src := adsConfigSourceEncoding()
	rds := protowire.SizeTag(rdsConfigSourceField) + protowire.SizeBytes(len(src))
	if name != "" {
		rds += protowire.SizeTag(rdsRouteConfigNameField) + protowire.SizeBytes(len(name))
	}
	size := protowire.SizeTag(hcmRDSField) + protowire.SizeBytes(rds) + len(rest.fields) + len(rest.oneofs)
	if name != "" {
		size += protowire.SizeTag(hcmStatPrefixField) + protowire.SizeBytes(len(name))
	}
	b := make([]byte, 0, size)
	b = appendString(b, hcmStatPrefixField, name)
	b = append(b, rest.fields...)
	b = protowire.AppendTag(b, hcmRDSField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(rds)) //nolint:gosec // a size, never negative
	b = protowire.AppendTag(b, rdsConfigSourceField, protowire.BytesType)
	b = protowire.AppendBytes(b, src)
	b = appendString(b, rdsRouteConfigNameField, name)
	return append(b, rest.oneofs...)
}
