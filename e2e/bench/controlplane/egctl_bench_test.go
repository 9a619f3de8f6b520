package controlplane

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
	"github.com/portcullis/portcullis/e2e/loadgen"
)

// egctlControllerName is the controllerName of Envoy Gateway's
// GatewayClasses: egctl x translate translates the Gateways of the
// input's GatewayClass only if it is its.
const egctlControllerName = "gateway.envoyproxy.io/gatewayclass-controller"

// targetEgctlRatio: portcullis translate's wall time at most this fraction
// of egctl x translate's on the same objects (the issue's; 0.0074× when
// first measured).
const targetEgctlRatio = 0.05

// BenchmarkTranslateVsEgctl times `portcullis translate` beside Envoy
// Gateway's `egctl x translate --from gateway-api --to xds` on the same
// Gateway API objects: the Gateway API case's at 1,000 HTTPRoutes
// (PORTCULLIS_BENCH_EGCTL_ROUTES changes it), each tool a child process,
// wall time and peak RSS (rusage), in PORTCULLIS_BENCH_EGCTL_RUNS rounds
// (1 by default: egctl takes about two minutes at 1,000) alternating which
// tool runs first; medians. egctl is .tools/bin/egctl, which make bench
// builds (hack/install-tools.sh egctl), or PORTCULLIS_EGCTL; without it the
// benchmark is skipped.
func BenchmarkTranslateVsEgctl(b *testing.B) {
	egctl := egctlPath(b)
	egVersion := "unknown version"
	if bi, err := buildinfo.ReadFile(egctl); err == nil {
		egVersion = bi.Main.Path + " " + bi.Main.Version
	}
	n, rounds := envCount(b, "PORTCULLIS_BENCH_EGCTL_ROUTES", 1000), envCount(b, "PORTCULLIS_BENCH_EGCTL_RUNS", 1)
	portcullis := harness.BuildBinary(b, "github.com/portcullis/portcullis/controlplane/cmd/portcullis")
	cert := harness.NewCA(b, "bench").Issue(b, "*.bench.example.com")

	// The same objects for both, but for the GatewayClass's controllerName:
	// each tool translates only its own GatewayClass's Gateways.
	dir := b.TempDir()
	oursFile := harness.WriteYAML(b, dir, "portcullis.yaml", egctlComparisonSet(cert, n, "")...)
	egctlFile := harness.WriteYAML(b, dir, "egctl.yaml", egctlComparisonSet(cert, n, egctlControllerName)...)
	size := int64(0)
	if fi, err := os.Stat(oursFile); err == nil {
		size = fi.Size()
	}

	var ours []translateRun
	var theirs []egctlRun
	for r := 0; r < rounds; r++ {
		runOurs := func() {
			// --strict: exits non-zero unless the GatewayClass, the Gateway
			// and every HTTPRoute are valid.
			t := runTranslate(b, portcullis, oursFile, n+2, "--strict")
			ours = append(ours, t)
			b.Logf("portcullis translate, %d HTTPRoutes: wall %v, pipeline %v, peak RSS %d MiB", n, t.wall, t.pipeline, t.maxRSS>>20)
		}
		runTheirs := func() {
			e := runEgctl(b, egctl, egctlFile, n)
			theirs = append(theirs, e)
			b.Logf("egctl x translate, %d HTTPRoutes: wall %v, peak RSS %d MiB, %s", n, e.wall, e.maxRSS>>20, e.routes)
		}
		if r%2 == 0 {
			runOurs()
			runTheirs()
		} else {
			runTheirs()
			runOurs()
		}
	}

	var oursWall, oursPipe, egWall []time.Duration
	var oursRSS, egRSS []time.Duration // bytes, as durations for loadgen.Median
	for _, t := range ours {
		oursWall, oursPipe, oursRSS = append(oursWall, t.wall), append(oursPipe, t.pipeline), append(oursRSS, time.Duration(t.maxRSS))
	}
	for _, e := range theirs {
		egWall, egRSS = append(egWall, e.wall), append(egRSS, time.Duration(e.maxRSS))
	}
	ow, ew := loadgen.Median(oursWall), loadgen.Median(egWall)
	or, er := int64(loadgen.Median(oursRSS)), int64(loadgen.Median(egRSS))
	ratio := float64(ow) / float64(ew)

	var sb strings.Builder
	fmt.Fprintf(&sb, "\nportcullis translate against Envoy Gateway's egctl x translate (%s), Gateway API case at %d HTTPRoutes\n", egVersion, n)
	fmt.Fprintf(&sb, "  the same objects (%.1f MB of YAML): 1 GatewayClass (each tool's controllerName), 1 Gateway (HTTP 80, HTTPS 443), %d HTTPRoutes (%d rules to Services and 1 redirect each), 1 Secret, %d Services with EndpointSlices\n",
		float64(size)/1e6, n, routes, services+1)
	fmt.Fprintf(&sb, "  portcullis translate -f FILE -o json --strict --stats; egctl x translate --from gateway-api --to xds -o json -f FILE; each a child process, %d run(s) each, alternating; medians\n", rounds)
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "tool\twall\tpeak RSS\tchecked\t")
	fmt.Fprintf(w, "portcullis translate\t%s\t%d MiB\tall %d objects valid (pipeline %s)\t\n", loadgen.Ms(ow), or>>20, n+2, loadgen.Ms(loadgen.Median(oursPipe)))
	fmt.Fprintf(w, "egctl x translate\t%s\t%d MiB\t%s\t\n", loadgen.Ms(ew), er>>20, theirs[len(theirs)/2].routes)
	fmt.Fprintf(w, "portcullis ÷ egctl\t%.4f×\t%.3f×\t\t\n", ratio, float64(or)/float64(er))
	w.Flush()
	verdict := "MISS"
	if ratio <= targetEgctlRatio {
		verdict = "PASS"
	}
	fmt.Fprintf(&sb, "target %s: portcullis translate wall %.4f× ≤ %.2f× of egctl x translate's at %d HTTPRoutes\n", verdict, ratio, targetEgctlRatio, n)
	fmt.Print(sb.String())
}

// egctlPath is $PORTCULLIS_EGCTL, else egctl among the installed tools;
// the benchmark fails without it (there is no comparison to print).
func egctlPath(b *testing.B) string {
	path := os.Getenv("PORTCULLIS_EGCTL")
	if path == "" {
		dir := os.Getenv("PORTCULLIS_TOOLS")
		if dir == "" {
			dir = filepath.Join(harness.RepoRoot(b), ".tools")
		}
		path = filepath.Join(dir, "bin", "egctl")
	}
	if fi, err := os.Stat(path); err != nil || fi.IsDir() {
		b.Fatalf("no egctl at %s: `hack/install-tools.sh egctl` builds it into .tools/bin (make bench does), or set PORTCULLIS_EGCTL", path)
	}
	return path
}

// egctlComparisonSet are the Gateway API case's objects for n HTTPRoutes
// that both tools read: without the ExtensionService (a Contour kind egctl
// does not know, which the case does not use), and with a ClusterIP on
// each Service (egctl x translate routes to the ClusterIP: it reads no
// EndpointSlices; portcullis reads them and not the ClusterIP).
// controllerName, when set, replaces the GatewayClass's.
func egctlComparisonSet(cert *harness.KeyPair, n int, controllerName string) []client.Object {
	var out []client.Object
	ip := 0
	for _, o := range gatewayShared(cert) {
		switch o := o.(type) {
		case *v1alpha1.ExtensionService:
			continue
		case *corev1.Service:
			ip++
			o.Spec.ClusterIP = fmt.Sprintf("10.96.0.%d", ip)
		case *gwapiv1.GatewayClass:
			if controllerName != "" {
				o.Spec.ControllerName = gwapiv1.GatewayController(controllerName)
			}
		}
		out = append(out, o)
	}
	for i := 0; i < n; i++ {
		out = append(out, httpRoute(i))
	}
	return out
}

// egctlRun is one egctl x translate of the comparison set.
type egctlRun struct {
	wall   time.Duration
	maxRSS int64 // bytes
	routes string
}

// runEgctl runs egctl x translate on file as a child process, its output
// to a file, and checks that output: every HTTPRoute's rules on both
// listeners, as routes to a cluster and redirects, none a direct response
// (what an invalid backend becomes).
func runEgctl(b *testing.B, egctl, file string, n int) egctlRun {
	b.Helper()
	outPath := filepath.Join(b.TempDir(), "egctl.json")
	out, err := os.Create(outPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(egctl, "x", "translate", "--from", "gateway-api", "--to", "xds", "-o", "json", "-f", file)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	out.Close()
	if err != nil {
		b.Fatalf("egctl x translate: %v\n%s", err, stderr.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	c, err := countEgctlRoutes(outPath)
	os.Remove(outPath)
	if err != nil {
		b.Fatalf("egctl x translate's output: %v", err)
	}
	if c.hosts != 2*n || c.toCluster != 2*n*routes || c.redirects != 2*n || c.direct != 0 {
		b.Fatalf("egctl x translate did not translate every HTTPRoute: %d virtual hosts, %d routes to clusters, %d redirects, %d direct responses; want %d, %d, %d, 0 (stderr: %s)",
			c.hosts, c.toCluster, c.redirects, c.direct, 2*n, 2*n*routes, 2*n, stderr.String())
	}
	return egctlRun{wall: wall, maxRSS: ru.Maxrss * 1024,
		routes: fmt.Sprintf("%d virtual hosts: %d routes to clusters, %d redirects", c.hosts, c.toCluster, c.redirects)}
}

// egctlRoutes counts what egctl's route configurations hold for the
// benchmark's hosts.
type egctlRoutes struct{ hosts, toCluster, redirects, direct int }

// countEgctlRoutes reads egctl's JSON output: per Gateway, an Envoy
// config dump whose RoutesConfigDump has the route configurations.
func countEgctlRoutes(path string) (egctlRoutes, error) {
	var c egctlRoutes
	f, err := os.Open(path)
	if err != nil {
		return c, err
	}
	defer f.Close()
	var doc struct {
		Xds map[string]struct {
			Configs []struct {
				DynamicRouteConfigs []struct {
					RouteConfig struct {
						VirtualHosts []struct {
							Domains []string `json:"domains"`
							Routes  []struct {
								Route          json.RawMessage `json:"route"`
								Redirect       json.RawMessage `json:"redirect"`
								DirectResponse json.RawMessage `json:"directResponse"`
							} `json:"routes"`
						} `json:"virtualHosts"`
					} `json:"routeConfig"`
				} `json:"dynamicRouteConfigs"`
			} `json:"configs"`
		} `json:"xds"`
	}
	if err := json.NewDecoder(f).Decode(&doc); err != nil {
		return c, err
	}
	if len(doc.Xds) == 0 {
		return c, fmt.Errorf("no xds in the output: no Gateway translated")
	}
	for _, gw := range doc.Xds {
		for _, cfg := range gw.Configs {
			for _, rc := range cfg.DynamicRouteConfigs {
				for _, vh := range rc.RouteConfig.VirtualHosts {
					if len(vh.Domains) == 0 || !strings.HasSuffix(vh.Domains[0], ".bench.example.com") {
						continue
					}
					c.hosts++
					for _, r := range vh.Routes {
						switch {
						case r.Route != nil:
							c.toCluster++
						case r.Redirect != nil:
							c.redirects++
						case r.DirectResponse != nil:
							c.direct++
						}
					}
				}
			}
		}
	}
	return c, nil
}

// envCount reads a positive count from the environment, def without it.
func envCount(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}
