// Package extdiff shows what extension servers change in a translation:
// for a run of the extension hook stage (extstage.Run) it diffs
// each extension's output with its input, resource by resource (route
// configurations virtual host by virtual host), in the YAML form
// `portcullis translate -o yaml` prints.
package extdiff

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/portcullis/portcullis/controlplane/internal/extension"
	"github.com/portcullis/portcullis/controlplane/internal/extstage"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/textdiff"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// Op is what happened to a resource.
type Op string

// The operations.
const (
	Added   Op = "added"
	Removed Op = "removed"
	Changed Op = "changed"
)

// Change is one resource an extension added, removed or changed.
type Change struct {
	// Resource names it as failures do: `Cluster "x"`,
	// `virtual host "a.example.com" of RouteConfiguration "ingress_http"`,
	// `RouteConfiguration "ingress_http"` (for its fields other than its
	// virtual hosts, or the whole of it when added or removed).
	Resource string
	Op       Op
	// Text is the unified diff of the resource's YAML before and after
	// (Changed), or its YAML (Added); empty for Removed.
	Text string
}

// Step is what one extension of the chain did.
type Step struct {
	Registration extension.Registration
	Changes      []Change
	Failures     []extension.Failure
	// Rejected: a hook of an extension whose failure policy is Closed
	// failed, so its output is not used (Changes is empty) and serve
	// would publish nothing of this translation.
	Rejected bool
}

// Report is what the chain did to a translation.
type Report struct {
	Steps []Step
}

// Failures are every step's failures.
func (r *Report) Failures() []extension.Failure {
	var out []extension.Failure
	for _, s := range r.Steps {
		out = append(out, s.Failures...)
	}
	return out
}

// Rejected says whether serve would keep its last good configuration
// instead of publishing this translation (a Closed extension failed).
func (r *Report) Rejected() bool {
	for _, s := range r.Steps {
		if s.Rejected {
			return true
		}
	}
	return false
}

// NewReport is what each extension of chain did in run, a run of the
// extension hook stage (extstage.Run) with chain: each
// extension's output diffed with its input, the previous extension's
// last good output (extension.Chain.Apply skips the output of an
// extension that failed under Closed), and its failures.
func NewReport(chain *extension.Chain, run *extstage.Result) (*Report, error) {
	r := &Report{}
	res := run.Stages[0]
	for i, ru := range chain.Runners() {
		reg := ru.Registration()
		st := Step{Registration: reg}
		for _, f := range run.Failures {
			if f.Extension == reg.Name {
				st.Failures = append(st.Failures, f)
			}
		}
		out := run.Stages[i+1]
		if out == nil {
			st.Rejected = true
		} else {
			changes, err := Diff(res, out)
			if err != nil {
				return nil, err
			}
			st.Changes = changes
			res = out
		}
		r.Steps = append(r.Steps, st)
	}
	return r, nil
}

// Diff compares two translations resource by resource: listeners, route
// configurations (by virtual host), clusters, endpoints and secrets
// (private keys redacted), in that order, each sorted by name.
func Diff(before, after *translator.Resources) ([]Change, error) {
	var out []Change
	for _, k := range []struct {
		kind     string
		a, b     []proto.Message
		perVHost bool
	}{
		{"Listener", before.Listeners, after.Listeners, false},
		{"RouteConfiguration", before.Routes, after.Routes, true},
		{"Cluster", before.Clusters, after.Clusters, false},
		{"ClusterLoadAssignment", before.Endpoints, after.Endpoints, false},
		{"Secret", translator.Redacted(before.Secrets), translator.Redacted(after.Secrets), false},
	} {
		a, b := byName(k.a), byName(k.b)
		for _, n := range unionNames(a, b) {
			what := fmt.Sprintf("%s %q", k.kind, n)
			ma, inA := a[n]
			mb, inB := b[n]
			var err error
			switch {
			case !inA:
				out, err = appendAdded(out, what, mb)
			case !inB:
				out = append(out, Change{Resource: what, Op: Removed})
			case proto.Equal(ma, mb):
			case k.perVHost:
				out, err = appendRouteConfiguration(out, what, ma, mb)
			default:
				out, err = appendChanged(out, what, ma, mb)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// appendRouteConfiguration appends the changes of a route configuration
// present before and after: its own fields, then each virtual host, then
// their order.
func appendRouteConfiguration(out []Change, what string, a, b proto.Message) ([]Change, error) {
	ra, okA := a.(*routev3.RouteConfiguration)
	rb, okB := b.(*routev3.RouteConfiguration)
	if !okA || !okB {
		return appendChanged(out, what, a, b)
	}
	out, err := appendRouteConfigurationFields(out, what, ra, rb)
	if err != nil {
		return nil, err
	}
	va, vb := virtualHostsByName(ra), virtualHostsByName(rb)
	if out, err = appendVirtualHosts(out, what, va, vb); err != nil {
		return nil, err
	}
	// The virtual hosts of both in another order: Envoy matches the first
	// of equal domains, so the order is part of the configuration.
	if !slices.Equal(commonVirtualHostOrder(ra, vb), commonVirtualHostOrder(rb, va)) {
		out = append(out, Change{Resource: what, Op: Changed, Text: "the order of its virtual hosts changed\n"})
	}
	return out, nil
}

// appendRouteConfigurationFields appends the change of the route
// configuration's fields other than its virtual hosts, if any.
func appendRouteConfigurationFields(out []Change, what string, ra, rb *routev3.RouteConfiguration) ([]Change, error) {
	sa, sb := proto.Clone(ra).(*routev3.RouteConfiguration), proto.Clone(rb).(*routev3.RouteConfiguration)
	sa.VirtualHosts, sb.VirtualHosts = nil, nil
	if proto.Equal(sa, sb) {
		return out, nil
	}
	return appendChanged(out, what+" (other than its virtual hosts)", sa, sb)
}

func virtualHostsByName(r *routev3.RouteConfiguration) map[string]proto.Message {
	m := map[string]proto.Message{}
	for _, vh := range r.GetVirtualHosts() {
		m[vh.GetName()] = vh
	}
	return m
}

// appendVirtualHosts appends the virtual hosts added, removed or changed,
// by name.
func appendVirtualHosts(out []Change, what string, va, vb map[string]proto.Message) ([]Change, error) {
	var err error
	for _, n := range unionNames(va, vb) {
		w := fmt.Sprintf("virtual host %q of %s", n, what)
		ma, inA := va[n]
		mb, inB := vb[n]
		switch {
		case !inA:
			out, err = appendAdded(out, w, mb)
		case !inB:
			out = append(out, Change{Resource: w, Op: Removed})
		case !proto.Equal(ma, mb):
			out, err = appendChanged(out, w, ma, mb)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// commonVirtualHostOrder is the names of r's virtual hosts that are also in
// other, in r's order.
func commonVirtualHostOrder(r *routev3.RouteConfiguration, other map[string]proto.Message) []string {
	var names []string
	for _, vh := range r.GetVirtualHosts() {
		if _, ok := other[vh.GetName()]; ok {
			names = append(names, vh.GetName())
		}
	}
	return names
}

func appendAdded(out []Change, what string, m proto.Message) ([]Change, error) {
	y, err := render(m)
	if err != nil {
		return nil, err
	}
	return append(out, Change{Resource: what, Op: Added, Text: y}), nil
}

func appendChanged(out []Change, what string, a, b proto.Message) ([]Change, error) {
	ya, err := render(a)
	if err != nil {
		return nil, err
	}
	yb, err := render(b)
	if err != nil {
		return nil, err
	}
	d := textdiff.Unified("before", "after", ya, yb)
	if d == "" {
		// Equal YAML of unequal messages (e.g. unknown fields): say so
		// rather than print nothing.
		d = "(the messages differ in a way their YAML does not show)\n"
	}
	return append(out, Change{Resource: what, Op: Changed, Text: d}), nil
}

// render is the YAML of a resource as `portcullis translate -o yaml`
// prints it (protojson with "@type", keys sorted).
func render(m proto.Message) (string, error) {
	j, err := pipeline.MarshalResource(m)
	if err != nil {
		return "", err
	}
	y, err := yaml.JSONToYAML(j)
	return string(y), err
}

func byName(ms []proto.Message) map[string]proto.Message {
	out := make(map[string]proto.Message, len(ms))
	for _, m := range ms {
		out[translator.ResourceName(m)] = m
	}
	return out
}

func unionNames(a, b map[string]proto.Message) []string {
	var out []string
	for n := range a {
		out = append(out, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Write prints the report for people: per extension, in chain order, its
// changes (diffs indented under the resource they concern) and its
// failures (hook, resource, outcome, gRPC code, message).
func (r *Report) Write(w io.Writer) error {
	var sb strings.Builder
	for _, s := range r.Steps {
		reg := s.Registration
		hooks := make([]string, len(reg.Hooks))
		for i, h := range reg.Hooks {
			hooks[i] = string(h)
		}
		where := reg.Address
		if reg.Service != "" {
			where = "extensionService " + reg.Service
		}
		fmt.Fprintf(&sb, "extension %q (%s; hooks %s; failurePolicy %s): %s, %s\n", reg.Name, where, strings.Join(hooks, ", "),
			reg.FailurePolicy, plural(len(s.Changes), "change"), plural(len(s.Failures), "failure"))
		writeChanges(&sb, s.Changes)
		for _, f := range s.Failures {
			fmt.Fprintf(&sb, "  failed: hook %s for %s: %s (gRPC code %s): %s\n", f.Hook, f.Resource, f.Outcome, f.Code, f.Message)
		}
		switch {
		case s.Rejected:
			sb.WriteString("  failurePolicy Closed: its output is not used, and serve would publish none of this translation (it keeps the last good configuration)\n")
		case len(s.Failures) > 0:
			sb.WriteString("  failurePolicy Open: the failed hooks' changes are left out, the rest is above\n")
		}
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// WriteChain prints what a whole chain did, for a run of
// extension.Chain.Apply: its changes (nil when rejected), then its
// failures, each naming its extension.
func WriteChain(w io.Writer, changes []Change, failures []extension.Failure, rejected bool) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "extensions: %s, %s\n", plural(len(changes), "change"), plural(len(failures), "failure"))
	writeChanges(&sb, changes)
	for _, f := range failures {
		fmt.Fprintf(&sb, "  failed: extension %q (failurePolicy %s) hook %s for %s: %s (gRPC code %s): %s\n", f.Extension, f.Policy, f.Hook, f.Resource, f.Outcome, f.Code, f.Message)
	}
	if rejected {
		sb.WriteString("  an extension whose failurePolicy is Closed failed: this build was not published, the last good configuration stays\n")
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

func writeChanges(sb *strings.Builder, changes []Change) {
	for _, c := range changes {
		fmt.Fprintf(sb, "  %s: %s\n", c.Op, c.Resource)
		writeIndented(sb, c.Text, "    ")
	}
}

func writeIndented(sb *strings.Builder, text, indent string) {
	if text == "" {
		return
	}
	for _, l := range strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n") {
		sb.WriteString(indent)
		sb.WriteString(strings.TrimSuffix(l, "\n"))
		sb.WriteString("\n")
	}
}

func plural(n int, s string) string {
	if n == 1 {
		return "1 " + s
	}
	return fmt.Sprintf("%d %ss", n, s)
}
