package sdk_test

import (
	"context"
	"fmt"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
)

// An extension that sets the retry policy of the routes that reference one
// of its RetryPolicy resources; every other hook passes through. A real
// extension serves it with sdk.Serve(ctx, listener, ext), and its tests
// call it through gRPC with sdktest.Serve(t, ext).
func Example() {
	ext := &sdk.Server{
		RouteModify: func(_ context.Context, req *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
			r := req.GetRoute()
			for _, res := range req.GetExtensionResources() {
				p, err := sdk.DecodeAs[RetryPolicy](res)
				if err != nil {
					return nil, err
				}
				if a := r.GetRoute(); a != nil {
					a.RetryPolicy = &routev3.RetryPolicy{
						RetryOn:    "5xx,reset",
						NumRetries: wrapperspb.UInt32(uint32(p.Spec.Attempts)),
					}
				}
			}
			return &v1alpha1.PostRouteModifyResponse{Route: r}, nil
		},
	}

	resp, err := ext.PostRouteModify(context.Background(), &v1alpha1.PostRouteModifyRequest{Route: route(), ExtensionResources: resources})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.GetRoute().GetRoute().GetRetryPolicy().GetNumRetries().GetValue())
	// Output: 3
}
