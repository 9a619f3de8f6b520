// Command contourbaseline measures Contour's own DAG builder and xDS caches
// (Contour v1.33, from the Go module proxy) on a directory of objects, the
// same way the control plane's benchmark measures Portcullis's pipeline
// (controlplane/internal/pipeline/contour_bench_test.go), and prints the
// figures as one JSON line. It is the baseline `make bench` prints ratios
// against; nothing else builds or ships it.
//
// Its module path is under github.com/projectcontour/contour because Go lets
// only code under that path import Contour's internal packages (the DAG
// builder and the caches are internal); it is a separate module, outside
// go.work, so that Contour keeps its own dependency versions. For the same
// reason it cannot share the measuring code with Portcullis's driver: keep
// the two measure the same (figures.go).
//
//	contourbaseline DIR CHANGES
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	discovery_v1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/yaml"

	contour_v1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"github.com/projectcontour/contour/internal/dag"
	envoy_v3 "github.com/projectcontour/contour/internal/envoy/v3"
	"github.com/projectcontour/contour/internal/status"
	"github.com/projectcontour/contour/internal/xdscache"
	xdscache_v3 "github.com/projectcontour/contour/internal/xdscache/v3"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: contourbaseline DIR CHANGES")
		os.Exit(2)
	}
	changes, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	objs, err := load(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	f, err := measure(objs, changes)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// contour is Contour's rebuild as its serve command wires it: the
// Kubernetes cache, the DAG processors, the xDS resource caches and the
// snapshot handler that publishes them to go-control-plane's caches.
type contour struct {
	builder   *dag.Builder
	resources []xdscache.ResourceCache
	snapshots *xdscache_v3.SnapshotHandler
	endpoints *xdscache_v3.EndpointSliceTranslator
}

func newContour() *contour {
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	gen := envoy_v3.NewEnvoyGen(envoy_v3.EnvoyGenOpt{XDSClusterName: envoy_v3.DefaultXDSClusterName})
	et := xdscache_v3.NewEndpointSliceTranslator(log)
	resources := []xdscache.ResourceCache{
		xdscache_v3.NewListenerCache(xdscache_v3.ListenerConfig{},
			contour_v1alpha1.MetricsConfig{Address: "0.0.0.0", Port: 8002}, contour_v1alpha1.HealthConfig{Address: "0.0.0.0", Port: 8002}, nil, 0, gen),
		&xdscache_v3.SecretCache{},
		&xdscache_v3.RouteCache{},
		xdscache_v3.NewClusterCache(gen),
		et,
	}
	sh := xdscache_v3.NewSnapshotHandler(resources, log)
	et.SetObserver(sh)
	return &contour{
		builder: &dag.Builder{
			Source: dag.KubernetesCache{FieldLogger: log},
			Processors: []dag.Processor{
				&dag.ListenerProcessor{HTTPAddress: "0.0.0.0", HTTPPort: 8080, HTTPSAddress: "0.0.0.0", HTTPSPort: 8443},
				&dag.IngressProcessor{FieldLogger: log.WithField("context", "IngressProcessor")},
				&dag.ExtensionServiceProcessor{FieldLogger: log.WithField("context", "ExtensionServiceProcessor")},
				&dag.HTTPProxyProcessor{},
			},
		},
		resources: resources,
		snapshots: sh,
		endpoints: et,
	}
}

// build is one DAG rebuild and translation, as Contour's event handler
// runs it after a change: build, then every cache's OnChange (the
// endpoints' publishes its own, to the EDS cache).
func (c *contour) build() *dag.DAG {
	d := c.builder.Build()
	for _, r := range c.resources {
		r.OnChange(d)
	}
	return d
}

// publish makes the snapshot of the caches' resources the one served.
func (c *contour) publish(d *dag.DAG) { c.snapshots.OnChange(d) }

// xdsBytes is the encoded size of every resource the caches hold.
func (c *contour) xdsBytes() (int, int) {
	size, n := 0, 0
	for _, r := range c.resources {
		for _, m := range r.Contents() {
			size += proto.Size(m)
			n++
		}
	}
	return size, n
}

func measure(objs []any, changes int) (figures, error) {
	c := newContour()
	var roots []*contour_v1.HTTPProxy
	for _, o := range objs {
		if s, ok := o.(*discovery_v1.EndpointSlice); ok {
			c.endpoints.OnAdd(s, false)
			continue
		}
		c.builder.Source.Insert(o)
		if p, ok := o.(*contour_v1.HTTPProxy); ok && p.Spec.VirtualHost != nil {
			roots = append(roots, p)
		}
	}
	var f figures
	var d *dag.DAG
	f.measureBuild(func() { d = c.build() }, func() { c.publish(d) })
	f.Objects = len(objs)
	f.ValidRoots = validRoots(d.StatusCache)
	f.XDSBytes, f.XDSResources = c.xdsBytes()
	if len(roots) == 0 {
		return f, fmt.Errorf("no root HTTPProxy")
	}
	f.measureChanges(changes, func(i int) {
		p := roots[i%len(roots)].DeepCopy()
		p.Spec.Routes[0].Conditions[0].Prefix = fmt.Sprintf("/changed-%d", i)
		p.Generation++
		roots[i%len(roots)] = p
		c.builder.Source.Insert(p)
		c.publish(c.build())
	})
	return f, nil
}

func validRoots(sc status.Cache) int {
	n := 0
	for _, u := range sc.GetProxyUpdates() {
		if u.Vhost == "" {
			continue
		}
		if dc, ok := u.Conditions[status.ValidCondition]; ok && dc.Status == "True" {
			n++
		}
	}
	return n
}

// load reads every object of the YAML files in dir, sorted by file name.
func load(dir string) ([]any, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []any
	for _, name := range files {
		b, err := os.ReadFile(name) //nolint:gosec // the benchmark's own files
		if err != nil {
			return nil, err
		}
		for _, doc := range bytes.Split(b, []byte("\n---\n")) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			var meta struct{ Kind string }
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			var o any
			switch meta.Kind {
			case "HTTPProxy":
				o = &contour_v1.HTTPProxy{}
			case "ExtensionService":
				o = &contour_v1alpha1.ExtensionService{}
			case "Service":
				o = &corev1.Service{}
			case "Secret":
				o = &corev1.Secret{}
			case "EndpointSlice":
				o = &discovery_v1.EndpointSlice{}
			default:
				return nil, fmt.Errorf("%s: kind %q is not part of the benchmark", name, meta.Kind)
			}
			if err := yaml.UnmarshalStrict(doc, o); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out = append(out, o)
		}
	}
	return out, nil
}
