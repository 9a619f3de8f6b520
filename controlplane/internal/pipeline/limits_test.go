package pipeline_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/provider/file"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// diamondYAML is a root including p0, and p0..p(depth-1) each including the
// next twice under different prefixes: 2^depth routes when built path by
// path.
func diamondYAML(depth int) string {
	var b strings.Builder
	b.WriteString("apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: root, namespace: default}\n" +
		"spec: {virtualhost: {fqdn: diamond.example.com}, includes: [{name: p0}]}\n")
	for i := range depth {
		fmt.Fprintf(&b, "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: p%d, namespace: default}\n"+
			"spec: {includes: [{name: p%d, conditions: [{prefix: /a}]}, {name: p%d, conditions: [{prefix: /b}]}]}\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: p%d, namespace: default}\n"+
		"spec: {routes: [{services: [{name: echo, port: 80}]}]}\n", depth)
	return b.String()
}

// TestIncludeDiamondIsBounded: include diamonds that expand to a million
// routes (depth 20, as in the include-diamond golden; before the limits, 3.2 GB
// at depth 18 and out of memory at 20) and to 32,768 (depth 15, within
// the default depth: maxIncludesPerRoot stops it) build in bounded memory
// and time, and fail closed: the root is not served, with
// IncludeLimitExceeded on it.
func TestIncludeDiamondIsBounded(t *testing.T) {
	common, _, err := file.Load([]string{"testdata/common"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		depth int
		want  string
	}{
		{20, "more than 16 HTTPProxies deep (limits.maxIncludeDepth)"},
		{15, "more than 10000 includes (limits.maxIncludesPerRoot"},
	} {
		t.Run(fmt.Sprintf("depth %d", tc.depth), func(t *testing.T) {
			set := &objects.Set{Secrets: common.Secrets, Services: common.Services, EndpointSlices: common.EndpointSlices}
			if _, err := set.Decode(strings.NewReader(diamondYAML(tc.depth)), "diamond.yaml"); err != nil {
				t.Fatal(err)
			}
			set.Sort()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			res := pipeline.Run(set, pipeline.DefaultOptions())
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			// Generous bounds: the build takes at most 40 MB and 150 ms; built
			// path by path it takes gigabytes.
			const maxBytes = 200 << 20
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > maxBytes {
				t.Errorf("the pipeline allocated %d MB, want at most %d MB", alloc>>20, maxBytes>>20)
			}
			if took > 20*time.Second {
				t.Errorf("the pipeline took %v", took)
			}
			t.Logf("allocated %d KB in %v", (after.TotalAlloc-before.TotalAlloc)>>10, took)
			for _, vh := range res.Build.Model.Listener(ir.HTTPListenerName).Insecure {
				if vh.FQDN == "diamond.example.com" {
					t.Errorf("diamond.example.com is served with %d routes", len(vh.Routes))
				}
			}
			found := false
			for _, o := range res.Build.Status {
				if o.Ref.Name != "root" {
					continue
				}
				for _, p := range o.Errors {
					found = found || p.Reason == status.ReasonIncludeLimitExceeded && strings.Contains(p.Message, tc.want)
				}
				if !found {
					t.Errorf("root: want an %s error containing %q, got %s", status.ReasonIncludeLimitExceeded, tc.want, status.Summary(o))
				}
			}
		})
	}
}

// tcpIncludeChainYAML is roots root0..root(roots-1), each a passthrough
// host whose tcpproxy includes t0, and t0..t(length-1) each including the
// next; t(length) has the service.
func tcpIncludeChainYAML(roots, length int) string {
	var b strings.Builder
	for i := range roots {
		fmt.Fprintf(&b, "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: root%d, namespace: default}\n"+
			"spec: {virtualhost: {fqdn: tcp%d.example.com, tls: {passthrough: true}}, tcpproxy: {include: {name: t0}}}\n", i, i)
	}
	for i := range length {
		fmt.Fprintf(&b, "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: t%d, namespace: default}\n"+
			"spec: {tcpproxy: {include: {name: t%d}}}\n", i, i+1)
	}
	fmt.Fprintf(&b, "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: t%d, namespace: default}\n"+
		"spec: {tcpproxy: {services: [{name: echo, port: 80}]}}\n", length)
	return b.String()
}

// TestTCPProxyIncludeChainIsBounded: a tcpproxy.include chain is bounded
// by limits.maxIncludeDepth, as routes' includes are: 100 roots including
// a chain of 5,000 HTTPProxies are refused at the limit (IncludeLimitExceeded
// on each root) instead of each walking the whole chain, while a chain
// within the limit is served.
func TestTCPProxyIncludeChainIsBounded(t *testing.T) {
	common, _, err := file.Load([]string{"testdata/common"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		roots, length int
		served        bool
	}{
		{100, 5000, false},
		{1, 15, true}, // root, t0..t15: 16 HTTPProxies below the root
		{1, 16, false},
	} {
		t.Run(fmt.Sprintf("%d roots, chain of %d", tc.roots, tc.length), func(t *testing.T) {
			set := &objects.Set{Secrets: common.Secrets, Services: common.Services, EndpointSlices: common.EndpointSlices}
			if _, err := set.Decode(strings.NewReader(tcpIncludeChainYAML(tc.roots, tc.length)), "chain.yaml"); err != nil {
				t.Fatal(err)
			}
			set.Sort()
			start := time.Now()
			res := pipeline.Run(set, pipeline.DefaultOptions())
			// Unbounded, the 100 roots walked the 5,000-long chain in 11 s.
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the pipeline took %v", took)
			}
			wantRefused := tc.roots
			if tc.served {
				wantRefused = 0
			}
			if got, want := len(res.Build.Model.Listener(ir.HTTPSListenerName).TCPHosts), tc.roots-wantRefused; got != want {
				t.Errorf("%d TCP hosts served, want %d", got, want)
			}
			refused := 0
			for _, o := range res.Build.Status {
				if !strings.HasPrefix(o.Ref.Name, "root") {
					continue
				}
				for _, p := range o.Errors {
					if p.Reason == status.ReasonIncludeLimitExceeded && strings.Contains(p.Message, "limits.maxIncludeDepth") {
						refused++
						break
					}
				}
			}
			if refused != wantRefused {
				t.Errorf("%d roots refused with an IncludeLimitExceeded (maxIncludeDepth) error, want %d", refused, wantRefused)
			}
		})
	}
}
