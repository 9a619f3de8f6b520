package extension

import (
	"fmt"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/extension/guard"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
)

// modifyEndpoints runs PostEndpointsModify on every cluster's endpoints
// (EDS) and returns them, the changed ones replaced (a new list when one
// changed). An answer keeps the cluster name; its endpoints may not reach
// the host itself unless the registration allows it.
func (ru *run) modifyEndpoints(eps []proto.Message) []proto.Message {
	changed := make([]*endpointv3.ClusterLoadAssignment, len(eps))
	ru.each(len(eps), func(i int) {
		in, ok := eps[i].(*endpointv3.ClusterLoadAssignment)
		if !ok {
			return
		}
		about := subject{resource: fmt.Sprintf("ClusterLoadAssignment %q", in.GetClusterName()),
			typeURL: resourcev3.EndpointType, names: []string{in.GetClusterName()}}
		req := &v1alpha1.PostEndpointsModifyRequest{LoadAssignment: in, Context: &v1alpha1.EndpointsContext{Origins: objectRefs(about.originsIn(ru.index))}}
		resp, key, ok := callKeyed(ru, HookPostEndpointsModify, about, req, ru.r.client.PostEndpointsModify,
			func(resp *v1alpha1.PostEndpointsModifyResponse, key cacheKey) error {
				out := resp.GetLoadAssignment()
				switch {
				case out == nil:
					return invalidf("no load_assignment (PostEndpointsModify changes endpoints; it cannot drop them)")
				case ru.passThrough(key, out, in):
					return nil
				case out.GetClusterName() != in.GetClusterName():
					return invalidf("the cluster name changed from %q to %q", in.GetClusterName(), out.GetClusterName())
				}
				if err := validate(out); err != nil {
					return invalidf("%v", err)
				}
				if ru.r.reg.AllowLocalEndpoints {
					return nil
				}
				if vs := guard.CheckLoadAssignment(out, ru.r.own); len(vs) > 0 {
					return invalidf("%s (allowLocalEndpoints lets an extension reach the host itself)", vs[0].Reason)
				}
				return nil
			})
		if ok && !ru.passThrough(key, resp.GetLoadAssignment(), in) {
			changed[i] = resp.GetLoadAssignment()
		}
	})
	var out []proto.Message
	for i, c := range changed {
		if c == nil {
			continue
		}
		if out == nil {
			out = append([]proto.Message(nil), eps...)
		}
		out[i] = c
	}
	if out == nil {
		return eps
	}
	return out
}
