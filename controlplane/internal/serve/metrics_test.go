package serve

import (
	"slices"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The metrics the docs name are there, at zero, before anything happened.
func TestMetricsRegisteredAtStart(t *testing.T) {
	m := newMetrics(nil, nil)
	want := []string{"portcullis_xds_rejections_total", "portcullis_translate_seconds", "portcullis_roots_reused_total", "portcullis_roots_built_total"}
	n, err := testutil.GatherAndCount(m.registry, want...)
	if err != nil {
		t.Fatal(err)
	}
	// One series per rejection type, and one each for the others.
	if n != len(rejectionTypes)+3 {
		t.Errorf("%d series of %v at start, want %d", n, want, len(rejectionTypes)+3)
	}
	// The labels are those a real rejection gets.
	for _, url := range []string{resourcev3.ListenerType, resourcev3.RouteType, resourcev3.ClusterType, resourcev3.EndpointType, resourcev3.SecretType} {
		l := typeLabel(url)
		if !slices.Contains(rejectionTypes, l) {
			t.Errorf("rejection type %q (of %s) is not registered at start", l, url)
		}
	}
}
