package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"

	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/provider/file"
	"github.com/portcullis/portcullis/controlplane/internal/xdsserver"
)

// driverEnv, set to DIR:CHANGES, makes the test binary Portcullis's driver
// for BenchmarkAgainstContour instead of running tests: each driver run is
// a process of its own, as Contour's is, so that the heap of one run does
// not carry into the next.
const driverEnv = "PORTCULLIS_BASELINE_DRIVER"

func TestMain(m *testing.M) {
	if arg := os.Getenv(driverEnv); arg != "" {
		os.Exit(runDriver(arg))
	}
	os.Exit(m.Run())
}

// The targets, Portcullis ÷ Contour, on both shapes.
var contourTargets = []struct {
	figure string
	max    float64
	of     func(figures) float64
}{
	{"full build + translation, CPU", 0.35, func(f figures) float64 { return float64(f.BuildCPU) }},
	{"first publication, CPU", 0, func(f figures) float64 { return float64(f.PublishCPU) }},
	{"full build, allocations", 0.35, func(f figures) float64 { return float64(f.BuildAllocs) }},
	{"full build, bytes allocated", 0, func(f figures) float64 { return float64(f.BuildBytes) }},
	{"heap peak, first build", 0.5, func(f figures) float64 { return float64(f.HeapPeak) }},
	{"xDS bytes", 0.5, func(f figures) float64 { return float64(f.XDSBytes) }},
	{"one change including publication, CPU", 0.1, func(f figures) float64 { return float64(f.ChangeCPU) }},
	{"one change, allocations", 0, func(f figures) float64 { return float64(f.ChangeAllocs) }},
}

// BenchmarkAgainstContour measures Portcullis's pipeline and xDS server
// against Contour v1.33's DAG builder and xDS caches
// (hack/contourbaseline) on the two shapes, each driver a process
// of its own reading the same YAML, in alternating rounds, and prints
// medians and ratios (make bench). PORTCULLIS_BENCH_ROUNDS (3) and
// PORTCULLIS_BENCH_ROOTS (10,000) change the rounds and the scale.
func BenchmarkAgainstContour(b *testing.B) {
	contour := buildContourBaseline(b)
	rounds, roots := envInt(b, "PORTCULLIS_BENCH_ROUNDS", 3), envInt(b, "PORTCULLIS_BENCH_ROOTS", 10000)
	const changes = 5
	var sb strings.Builder
	fmt.Fprintf(&sb, "Portcullis against Contour v1.33 (DAG builder, xDS caches, snapshot), %d roots, %d rounds, alternating; medians\n", roots, rounds)
	for _, shape := range shapes {
		dir := b.TempDir()
		writeObjects(b, filepath.Join(dir, "objects.yaml"), shape.set(b, roots))
		arg := fmt.Sprintf("%s:%d", dir, changes)
		var ours, theirs []figures
		for r := range rounds {
			runOurs := func() { ours = append(ours, runFigures(b, exec.Command(os.Args[0]), driverEnv+"="+arg)) }
			runTheirs := func() { theirs = append(theirs, runFigures(b, exec.Command(contour, dir, fmt.Sprint(changes)))) }
			if r%2 == 0 {
				runTheirs()
				runOurs()
			} else {
				runOurs()
				runTheirs()
			}
		}
		for name, fs := range map[string][]figures{"portcullis": ours, "contour": theirs} {
			for _, f := range fs {
				if f.ValidRoots != roots {
					b.Fatalf("%s, %s shape: %d valid roots of %d: the comparison would not be of the same work", name, shape.name, f.ValidRoots, roots)
				}
			}
		}
		fmt.Fprintf(&sb, "\n%s shape (%s):\n", shape.name, shape.describe)
		w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "figure\tportcullis\tcontour\tratio\ttarget\t\t")
		for _, t := range contourTargets {
			o, c := medianOf(ours, t.of), medianOf(theirs, t.of)
			ratio, target, verdict := o/c, "", ""
			if t.max > 0 {
				target, verdict = fmt.Sprintf("≤ %.2f×", t.max), "MISS"
				if ratio <= t.max {
					verdict = "PASS"
				}
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%.3f×\t%s\t%s\t\n", t.figure, unit(t.figure, o), unit(t.figure, c), ratio, target, verdict)
		}
		w.Flush()
	}
	fmt.Print(sb.String())
}

// unit prints v as the figure counts it.
func unit(figure string, v float64) string {
	switch {
	case strings.Contains(figure, "CPU"):
		return fmt.Sprintf("%.1f ms", v/1e6)
	case strings.Contains(figure, "bytes") || strings.Contains(figure, "heap"):
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	}
	return fmt.Sprintf("%.0f", v)
}

func medianOf(fs []figures, of func(figures) float64) float64 {
	xs := make([]float64, len(fs))
	for i, f := range fs {
		xs[i] = of(f)
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// runFigures runs one driver and decodes its figures.
func runFigures(b *testing.B, cmd *exec.Cmd, env ...string) figures {
	b.Helper()
	var out, stderr bytes.Buffer
	cmd.Env, cmd.Stdout, cmd.Stderr = append(os.Environ(), env...), &out, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", cmd.Path, err, stderr.String())
	}
	var f figures
	if err := json.Unmarshal(out.Bytes(), &f); err != nil {
		b.Fatalf("%s: %v in %q", cmd.Path, err, out.String())
	}
	return f
}

// buildContourBaseline builds hack/contourbaseline, a module of its own
// outside go.work (Contour's dependencies stay Contour's), with the Go
// module proxy: the first build downloads Contour v1.33 and its
// dependencies (a few minutes), the next ones come from Go's caches.
func buildContourBaseline(b *testing.B) string {
	b.Helper()
	out := filepath.Join(b.TempDir(), "contourbaseline")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = filepath.Join("..", "..", "..", "hack", "contourbaseline")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building the Contour baseline in %s (it needs the Go module proxy): %v\n%s", cmd.Dir, err, msg)
	}
	return out
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// writeObjects writes set as one YAML stream, which both drivers read.
func writeObjects(b *testing.B, path string, set *objects.Set) {
	b.Helper()
	var buf bytes.Buffer
	put := func(gv schema.GroupVersion, kind string, o any) {
		j, err := json.Marshal(o)
		if err != nil {
			b.Fatal(err)
		}
		var fields map[string]any
		if err := json.Unmarshal(j, &fields); err != nil {
			b.Fatal(err)
		}
		fields["apiVersion"], fields["kind"] = gv.String(), kind
		m, err := yaml.Marshal(fields)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(&buf, "%s---\n", m)
	}
	core, discovery := schema.GroupVersion{Version: "v1"}, schema.GroupVersion{Group: "discovery.k8s.io", Version: "v1"}
	for _, o := range set.Secrets {
		put(core, "Secret", o)
	}
	for _, o := range set.Services {
		put(core, "Service", o)
	}
	for _, o := range set.EndpointSlices {
		put(discovery, "EndpointSlice", o)
	}
	for _, o := range set.ExtensionServices {
		put(schema.GroupVersion{Group: "projectcontour.io", Version: "v1alpha1"}, "ExtensionService", o)
	}
	for _, o := range set.HTTPProxies {
		put(schema.GroupVersion{Group: "projectcontour.io", Version: "v1"}, "HTTPProxy", o)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
}

// runDriver is Portcullis's driver: it reads DIR, measures as Contour's
// driver does (figures) and prints the figures as JSON.
func runDriver(arg string) int {
	dir, n, _ := strings.Cut(arg, ":")
	changes, err := strconv.Atoi(n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	set, _, err := file.Load(files)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f, err := measurePortcullis(set, changes)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// measurePortcullis measures `portcullis serve`'s rebuild: the pipeline
// with its caches, then publication to the xDS server.
func measurePortcullis(set *objects.Set, changes int) (figures, error) {
	ctx, opts, cache := context.Background(), pipeline.DefaultOptions(), pipeline.NewCache()
	srv := xdsserver.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	var f figures
	var res *pipeline.Result
	var err error
	f.measureBuild(func() { res = pipeline.RunCached(set, opts, cache) }, func() { _, err = srv.Update(ctx, res.Resources) })
	if err != nil {
		return f, err
	}
	f.Objects = objectCount(set)
	roots := map[string]bool{}
	for _, p := range set.HTTPProxies {
		if p.Spec.VirtualHost != nil {
			roots[p.Namespace+"/"+p.Name] = true
		}
	}
	for _, o := range res.Build.Status {
		if o.Ref.Kind == "HTTPProxy" && roots[o.Ref.Namespace+"/"+o.Ref.Name] && o.Valid() {
			f.ValidRoots++
		}
	}
	for _, l := range [][]proto.Message{res.Resources.Listeners, res.Resources.Routes, res.Resources.Clusters, res.Resources.Endpoints, res.Resources.Secrets} {
		for _, m := range l {
			f.XDSBytes += proto.Size(m)
			f.XDSResources++
		}
	}
	change := rootChanger(set)
	cur := set
	f.measureChanges(changes, func(i int) {
		cur = change(cur, i)
		res = pipeline.RunCached(cur, opts, cache)
		_, err = srv.Update(ctx, res.Resources)
	})
	return f, err
}
