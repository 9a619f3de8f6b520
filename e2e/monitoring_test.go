package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
	"golang.org/x/crypto/bcrypt"
)

// monitoringDir holds the chart's dashboards and alerts (docs/monitoring.md).
func monitoringDir(t *testing.T) string {
	return filepath.Join(harness.RepoRoot(t), "charts", "portcullis", "monitoring")
}

// dashboard is what the tests read of a Grafana dashboard.
type dashboard struct {
	UID    string  `json:"uid"`
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
	// Templating variables whose query names a metric
	// (label_values(metric, label)).
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"` // a collapsed row's
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// loadDashboards reads every dashboard of dir, failing on one that is not
// JSON of that shape.
func loadDashboards(t *testing.T, dir string) map[string]dashboard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in %s (%v)", dir, err)
	}
	out := map[string]dashboard{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		dec := json.NewDecoder(strings.NewReader(string(data)))
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = d
	}
	return out
}

// queries are every PromQL expression of a dashboard, by where it is.
func (d dashboard) queries() map[string]string {
	out := map[string]string{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for i, tg := range p.Targets {
				out[fmt.Sprintf("panel %q target %d", p.Title, i)] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			if m := labelValues.FindStringSubmatch(q); m != nil {
				out[fmt.Sprintf("variable %q", v.Name)] = m[1]
			}
		}
	}
	return out
}

// labelValues is Grafana's label_values(selector, label).
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

// grafanaVariables are the variables Grafana replaces before a query
// reaches Prometheus, with a value of the same syntax.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// metricNames parses expr (Grafana's variables replaced) and returns the
// metric name of each selector.
func metricNames(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVariables.Replace(expr))
	if err != nil {
		return nil, err
	}
	var names []string
	var noName error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if vs.Name == "" {
				noName = fmt.Errorf("selector %s names no metric", vs)
			}
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, noName
}

// alertRule is what the tests read of a Prometheus rule.
type alertRule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type ruleGroups struct {
	Groups []struct {
		Name  string      `json:"name"`
		Rules []alertRule `json:"rules"`
	} `json:"groups"`
}

func loadRules(t *testing.T) ruleGroups {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(monitoringDir(t), "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var g ruleGroups
	if err := yaml.UnmarshalStrict(data, &g); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	return g
}

// scrapeNames returns the metric names of a Prometheus text exposition
// (histograms' _bucket, _sum and _count as they are exposed).
func scrapeNames(url string) (map[string]bool, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names, sc.Err()
}

// TestMonitoringQueriesUseExposedMetrics runs every binary the dashboards
// and alerts watch (the control plane, Envoy with ext_authz and ext_proc
// in its path, the testserver, htpasswd and oidc auth servers, the
// extprocserver), sends a request through them, scrapes each, and fails on
// any selector of a dashboard or rule whose metric none of them exposes.
// Envoy is scraped on the stats listener (bootstrap --stats-address), as a
// PodMonitor does; that listener must serve nothing else of the admin
// interface.
func TestMonitoringQueriesUseExposedMetrics(t *testing.T) {
	c := harness.StartComponents(t)
	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	tmp := t.TempDir()

	// htpasswd, from a file (bcrypt: its cache metrics).
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(tmp, "users")
	writeTestFile(t, users, "alice:"+string(hash)+"\n")
	htMetrics := harness.FreeAddr(t)
	harness.StartProcess(t, "authserver-htpasswd", authserver, "htpasswd", "--address", harness.FreeAddr(t),
		"--metrics-address", htMetrics, "--htpasswd-file", users)

	// oidc, against a provider that is not there: its metrics exist from
	// the start, and discovery fails (what ProviderUnreachable watches).
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(tmp, "cookie-key")
	writeTestFile(t, keyFile, base64.StdEncoding.EncodeToString(key))
	oidcConfig := filepath.Join(tmp, "oidc.yaml")
	writeTestFile(t, oidcConfig, fmt.Sprintf("issuer: http://%s\nallowInsecureIssuer: true\nclientID: portcullis\ncookie:\n  keyFile: %s\n",
		harness.FreeAddr(t), keyFile))
	oidcMetrics := harness.FreeAddr(t)
	harness.StartProcess(t, "authserver-oidc", authserver, "oidc", "--config", oidcConfig, "--address", harness.FreeAddr(t),
		"--metrics-address", oidcMetrics)

	proc := harness.StartExtProcServer(t, "processors:\n- observe: {headerPrefix: \"-\"}\n")

	// The control plane on a real API server (the status writer's metrics
	// exist only there), global authorization and processing on, its
	// metrics on their own endpoint; Envoy with its stats listener.
	api := harness.StartAPIServer(t, harness.CRDDirs(t)...)
	cfg := filepath.Join(tmp, "portcullis.yaml")
	writeTestFile(t, cfg, fmt.Sprintf(`globalExtAuth:
  extensionService: %[1]s/auth-h2c
  failOpen: false
  responseTimeout: 5s
globalExtProc:
  processor:
    grpcService:
      extensionRef: {name: proc, namespace: %[1]s}
      responseTimeout: 5s
    processingMode: {requestHeaderMode: SEND, responseHeaderMode: SEND, requestBodyMode: NONE, responseBodyMode: NONE}
`, harness.AuthNamespace))
	httpAddr, httpsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	cpMetrics := harness.FreeAddr(t)
	cp := harness.StartControlPlane(t, "portcullis", httpAddr, httpsAddr, "--provider", "kubernetes", "--kubeconfig", api.KubeconfigPath,
		"--enable-external-name-services", "--allow-loopback-external-names", "--config", cfg, "--metrics-address", cpMetrics)
	stats := harness.FreeAddr(t)
	harness.StartEnvoyOn(t, cp.XDSAddr, "--stats-address", stats)

	h2c := "h2c"
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: harness.AuthNamespace}}}
	objs = append(objs, harness.LoopbackExternalName(harness.AuthNamespace, "echo", 80, c.Echo.Port)...)
	for name, addr := range map[string]string{"auth-h2c": c.AuthH2C, "proc": proc.Addr} {
		objs = append(objs, harness.LoopbackExternalName(harness.AuthNamespace, name, 9000, harness.Port(t, addr))...)
		objs = append(objs, &v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: name},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: name, Port: 9000}}}})
	}
	objs = append(objs, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: "watched"},
		Spec: contourv1.HTTPProxySpec{VirtualHost: &contourv1.VirtualHost{Fqdn: "watched.example.com"},
			Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}}}})
	if err := api.Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
	harness.EventuallyStatus(t, harness.HTTPClient(httpAddr), "http://watched.example.com/", http.StatusOK)

	t.Run("the stats listener serves /stats/prometheus and nothing else", func(t *testing.T) {
		for path, want := range map[string]int{"/stats/prometheus": 200, "/stats/prometheus?usedonly": 200,
			"/stats": 404, "/config_dump": 404, "/clusters": 404, "/ready": 404, "/": 404} {
			code, err := harness.StatusCode(http.DefaultClient, "http://"+stats+path)
			if err != nil || code != want {
				t.Errorf("GET %s on the stats listener: %d %v, want %d", path, code, err, want)
			}
		}
		for _, path := range []string{"/quitquitquit", "/healthcheck/fail", "/stats/prometheus"} {
			resp, err := http.Post("http://"+stats+path, "text/plain", nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("POST %s on the stats listener: %d, want 404", path, resp.StatusCode)
			}
		}
	})

	exposed := map[string]bool{}
	for _, url := range []string{"http://" + cpMetrics + "/metrics", "http://" + stats + "/stats/prometheus",
		"http://" + c.AuthMetrics + "/metrics", "http://" + htMetrics + "/metrics", "http://" + oidcMetrics + "/metrics",
		"http://" + proc.MetricsAddr + "/metrics"} {
		var names map[string]bool
		harness.Eventually(t, 30*time.Second, func() error {
			var err error
			if names, err = scrapeNames(url); err != nil {
				return err
			}
			if len(names) == 0 {
				return fmt.Errorf("%s exposes no metric", url)
			}
			return nil
		})
		for n := range names {
			exposed[n] = true
		}
	}
	if os.Getenv("PORTCULLIS_DUMP_METRICS") != "" {
		all := make([]string, 0, len(exposed))
		for n := range exposed {
			all = append(all, n)
		}
		sort.Strings(all)
		t.Logf("exposed:\n%s", strings.Join(all, "\n"))
	}

	check := func(t *testing.T, where, expr string) {
		names, err := metricNames(expr)
		if err != nil {
			t.Errorf("%s: %q: %v", where, expr, err)
		}
		for _, n := range names {
			if n != "" && !exposed[n] {
				t.Errorf("%s: %q uses %s, which no binary exposes", where, expr, n)
			}
		}
	}
	t.Run("dashboards", func(t *testing.T) {
		for file, d := range loadDashboards(t, filepath.Join(monitoringDir(t), "dashboards")) {
			for where, expr := range d.queries() {
				check(t, file+": "+where, expr)
			}
		}
	})
	t.Run("alerts", func(t *testing.T) {
		for _, g := range loadRules(t).Groups {
			for _, r := range g.Rules {
				check(t, g.Name+"/"+r.Alert+r.Record, r.Expr)
			}
		}
	})
}

// TestMetricNamesCatchesAnUnknownMetric: the check above would fail on a
// misspelt metric, a selector without a name and a query that does not
// parse.
func TestMetricNamesCatchesAnUnknownMetric(t *testing.T) {
	names, err := metricNames(`sum by (type) (rate(portcullis_xds_rejections_totl{job=~"$job"}[$__rate_interval])) / on() group_left portcullis_xds_clients`)
	if err != nil || !slices.Equal(names, []string{"portcullis_xds_rejections_totl", "portcullis_xds_clients"}) {
		t.Errorf("names %v, %v", names, err)
	}
	if _, err := metricNames(`rate({job="x"}[5m])`); err == nil {
		t.Error("a selector without a metric name passed")
	}
	if _, err := metricNames(`rate(portcullis_xds_clients[5m]`); err == nil {
		t.Error("an expression that does not parse passed")
	}
}
