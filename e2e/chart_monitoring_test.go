package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/portcullis/portcullis/e2e/harness"
)

// decodeStrict decodes a rendered object into a typed one, failing on a
// field the type does not have (a PodMonitor the operator would refuse).
func decodeStrict(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	data, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// podTemplates are the pod templates of the rendered Deployments and
// DaemonSets.
func podTemplates(t *testing.T, objs []*unstructured.Unstructured) []corev1.PodTemplateSpec {
	var out []corev1.PodTemplateSpec
	for _, u := range objs {
		switch u.GetKind() {
		case "Deployment":
			var d appsv1.Deployment
			decodeStrict(t, u, &d)
			out = append(out, d.Spec.Template)
		case "DaemonSet":
			var d appsv1.DaemonSet
			decodeStrict(t, u, &d)
			out = append(out, d.Spec.Template)
		}
	}
	return out
}

// TestHelmChartMonitoring renders the chart with its monitoring objects on,
// in both topologies: each PodMonitor (decoded with the operator's types)
// selects pods that have the port it scrapes, the PrometheusRule holds
// monitoring/alerts.yaml with every expression valid PromQL, and each
// dashboard is a ConfigMap holding its file. Off (the default), none of
// them is rendered.
func TestHelmChartMonitoring(t *testing.T) {
	dir := monitoringDir(t)
	dashboards := loadDashboards(t, filepath.Join(dir, "dashboards"))
	rules := loadRules(t)
	on := []string{"--set", "monitoring.podMonitor.enabled=true", "--set", "monitoring.podMonitor.labels.release=prometheus",
		"--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.dashboards.enabled=true",
		"--set", "authserver.enabled=true", "--set", "authserver.backend=testserver", "--set", "extprocserver.enabled=true"}
	for _, topology := range []string{"separate", "colocated"} {
		t.Run(topology, func(t *testing.T) {
			objs := helmTemplate(t, append(on, "--set", "topology="+topology)...)
			pods := podTemplates(t, objs)
			var monitors []string
			var ruleCount int
			configMaps := map[string]string{}
			for _, u := range objs {
				switch u.GetKind() {
				case "PodMonitor":
					var pm monitoringv1.PodMonitor
					decodeStrict(t, u, &pm)
					monitors = append(monitors, pm.Labels["app.kubernetes.io/component"])
					if pm.Labels["release"] != "prometheus" {
						t.Errorf("PodMonitor %s lacks monitoring.podMonitor.labels: %v", pm.Name, pm.Labels)
					}
					checkPodMonitor(t, pm, pods)
				case "PrometheusRule":
					var pr monitoringv1.PrometheusRule
					decodeStrict(t, u, &pr)
					for _, g := range pr.Spec.Groups {
						for _, r := range g.Rules {
							ruleCount++
							if _, err := metricNames(r.Expr.String()); err != nil {
								t.Errorf("rule %s: %v", r.Alert, err)
							}
							if r.Alert != "" && (r.Annotations["summary"] == "" || r.Labels["severity"] == "") {
								t.Errorf("alert %s: no summary or severity", r.Alert)
							}
						}
					}
				case "ConfigMap":
					var cm corev1.ConfigMap
					decodeStrict(t, u, &cm)
					if cm.Labels["grafana_dashboard"] == "1" {
						for k, v := range cm.Data {
							configMaps[k] = v
						}
					}
				}
			}
			slices.Sort(monitors)
			if want := []string{"authserver", "controlplane", "envoy", "extprocserver"}; !slices.Equal(monitors, want) {
				t.Errorf("PodMonitors of %v, want %v", monitors, want)
			}
			want := 0
			for _, g := range rules.Groups {
				want += len(g.Rules)
			}
			if ruleCount != want || want == 0 {
				t.Errorf("the PrometheusRule has %d rules, alerts.yaml %d", ruleCount, want)
			}
			for file := range dashboards {
				data, err := os.ReadFile(filepath.Join(dir, "dashboards", file))
				if err != nil {
					t.Fatal(err)
				}
				if configMaps[file] != string(bytes.TrimRight(data, "\n")) {
					t.Errorf("dashboard %s: no ConfigMap holds it as it is", file)
				}
			}
			if len(configMaps) != len(dashboards) {
				t.Errorf("%d dashboard ConfigMaps, %d dashboards", len(configMaps), len(dashboards))
			}
		})
	}
	t.Run("off by default", func(t *testing.T) {
		for _, u := range helmTemplate(t) {
			if u.GetKind() == "PodMonitor" || u.GetKind() == "PrometheusRule" || u.GetLabels()["grafana_dashboard"] != "" {
				t.Errorf("rendered %s %s by default", u.GetKind(), u.GetName())
			}
		}
	})
}

// checkPodMonitor fails unless pm selects at least one pod template, and
// every pod it selects has a container port of each endpoint's name.
func checkPodMonitor(t *testing.T, pm monitoringv1.PodMonitor, pods []corev1.PodTemplateSpec) {
	t.Helper()
	sel := labels.SelectorFromSet(pm.Spec.Selector.MatchLabels)
	selected := 0
	for _, p := range pods {
		if !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		selected++
		for _, ep := range pm.Spec.PodMetricsEndpoints {
			if ep.Port == nil || !hasContainerPort(p.Spec, *ep.Port) {
				t.Errorf("PodMonitor %s scrapes port %v, which the pods it selects (%v) do not have", pm.Name, ep.Port, p.Labels)
			}
			if ep.Path == "" {
				t.Errorf("PodMonitor %s: an endpoint without a path", pm.Name)
			}
		}
	}
	if selected == 0 {
		t.Errorf("PodMonitor %s selects no pod (%v)", pm.Name, pm.Spec.Selector.MatchLabels)
	}
}

func hasContainerPort(spec corev1.PodSpec, name string) bool {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return true
			}
		}
	}
	return false
}

// TestDashboardsLoad: every dashboard is JSON with a unique uid and a
// title, every panel but a row has a query, every query parses, and
// docs/monitoring holds the chart's files unchanged.
func TestDashboardsLoad(t *testing.T) {
	dir := monitoringDir(t)
	uids := map[string]string{}
	for file, d := range loadDashboards(t, filepath.Join(dir, "dashboards")) {
		if d.UID == "" || d.Title == "" {
			t.Errorf("%s: uid %q, title %q", file, d.UID, d.Title)
		}
		if other, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share the uid %q", file, other, d.UID)
		}
		uids[d.UID] = file
		if len(d.Panels) == 0 {
			t.Errorf("%s has no panel", file)
		}
		var walk func(ps []panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				if p.Type == "row" {
					walk(p.Panels)
					continue
				}
				if len(p.Targets) == 0 {
					t.Errorf("%s: panel %q has no query", file, p.Title)
				}
				for _, tg := range p.Targets {
					if _, err := metricNames(tg.Expr); err != nil {
						t.Errorf("%s: panel %q: %q: %v", file, p.Title, tg.Expr, err)
					}
				}
			}
		}
		walk(d.Panels)
	}
	docs := filepath.Join(harness.RepoRoot(t), "docs", "monitoring")
	chartFiles, _ := filepath.Glob(filepath.Join(dir, "dashboards", "*.json"))
	docFiles, _ := filepath.Glob(filepath.Join(docs, "dashboards", "*.json"))
	if len(chartFiles) != len(docFiles) {
		t.Errorf("docs/monitoring/dashboards has %d dashboards, the chart %d: copy charts/portcullis/monitoring to docs/monitoring", len(docFiles), len(chartFiles))
	}
	for _, f := range append(chartFiles, filepath.Join(dir, "alerts.yaml")) {
		rel, _ := filepath.Rel(dir, f)
		a, errA := os.ReadFile(f)
		b, errB := os.ReadFile(filepath.Join(docs, rel))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("docs/monitoring/%s is not the chart's (%v, %v): copy charts/portcullis/monitoring to docs/monitoring", rel, errA, errB)
		}
	}
}
