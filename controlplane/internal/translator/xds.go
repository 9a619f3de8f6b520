package translator

import (
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// adsConfigSource says "over the ADS stream": every RDS, EDS and SDS
// reference uses it, so that Envoy gets everything on one stream. It is
// one message, shared by the tens of thousands of references of a large
// translation (a message is never modified once built).
var adsConfigSource = sync.OnceValue(func() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
})

func socketAddress(addr string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       addr,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

// mustAny packs a message; it only fails for a nil message, a programming
// error. The packed bytes are deterministic (maps in key order), so that
// equal configurations are equal byte for byte: the xDS versions are hashes
// of them, and identical virtual hosts are found by them.
func mustAny(m proto.Message) *anypb.Any {
	a := &anypb.Any{}
	if err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		panic(err)
	}
	return a
}
