package e2e

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestChartXDSClientTimeout: controlPlane.xdsClientTimeout reaches every
// control plane's --xds-client-timeout, in both topologies (2m by
// default, docs/production.md "xDS clients").
func TestChartXDSClientTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"default, separate", nil, "--xds-client-timeout=2m"},
		{"set, separate", []string{"--set", "controlPlane.xdsClientTimeout=45s"}, "--xds-client-timeout=45s"},
		{"set, colocated", []string{"--set", "topology=colocated", "--set", "controlPlane.xdsClientTimeout=45s"}, "--xds-client-timeout=45s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found := 0
			for _, o := range helmTemplate(t, tc.args...) {
				for _, args := range portcullisServeArgs(t, o) {
					if !slices.Contains(args, tc.want) {
						t.Errorf("%s %s: portcullis serve %v, want %s", o.GetKind(), o.GetName(), args, tc.want)
					}
					found++
				}
			}
			if found == 0 {
				t.Fatal("no portcullis serve container rendered")
			}
		})
	}
}

// portcullisServeArgs are the args of the containers of o named
// portcullis that run `serve`.
func portcullisServeArgs(t *testing.T, o *unstructured.Unstructured) [][]string {
	t.Helper()
	containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if err != nil {
		return nil
	}
	var out [][]string
	for _, c := range containers {
		m, _ := c.(map[string]any)
		if m["name"] != "portcullis" {
			continue
		}
		args, _, _ := unstructured.NestedStringSlice(m, "args")
		if len(args) > 0 && args[0] == "serve" {
			out = append(out, args)
		}
	}
	return out
}
