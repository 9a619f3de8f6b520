// Command agreement runs the HTTPProxy cases of Contour's own DAG tests
// (internal/dag/status_test.go and builder_test.go of Contour v1.33, from
// the module cache) through Contour's builder and through Portcullis, and
// compares the verdicts: valid or not for each HTTPProxy, and the reasons of
// the errors and warnings of its Valid condition.
//
// Contour's test cases are Go code in _test.go files, which nothing can
// import. So the command copies Contour's module to a temporary directory,
// adds a call after each `dag := builder.Build()` of those two files and a
// test file of ours (record_test.go.txt) that writes each case down: its
// objects as YAML, the builder's configuration, and the Valid condition
// Contour's DAG wrote on each HTTPProxy. It runs those tests (Contour's own
// builder, as the tests configure it), then `portcullis translate` on each
// case's objects with the same root namespaces, fallback certificate and
// ExternalName setting, and prints the figures and every disagreement.
// Cases whose builder has configuration translate has no flag for (a
// Gateway, default header policies, a global authorization...) are counted
// as skipped, with the reason.
//
// Nothing is committed from the copy; see hack/contour-agreement.sh.
//
//	agreement -contour DIR -portcullis BIN [-keep] [-run REGEXP] [-cases DIR]
package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

//go:embed record_test.go.txt
var recordTest []byte

// The tests of Contour's internal/dag whose cases hold HTTPProxies and whose
// builder writes their status.
const contourTests = "^(TestDAGStatus|TestDAGInsert|TestDAGRootNamespaces|TestHTTPProxyConficts|TestDefaultHeadersPolicies)$"

var buildCall = regexp.MustCompile(`(?m)^(\t+)dag := builder\.Build\(\)$`)

func main() {
	contourDir := flag.String("contour", "", "Contour's module directory (go mod download -json github.com/projectcontour/contour)")
	portcullis := flag.String("portcullis", "", "the portcullis binary")
	keep := flag.Bool("keep", false, "keep the temporary directory (the copy, the recorded cases)")
	run := flag.String("run", "", "compare only the cases whose test name matches this regular expression")
	cases := flag.String("cases", "", "a directory for the recorded cases: when it already holds some, they are compared again without running Contour's tests")
	flag.Parse()
	if *contourDir == "" || *portcullis == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := agree(*contourDir, *portcullis, *keep, *run, *cases); err != nil {
		fmt.Fprintln(os.Stderr, "agreement:", err)
		os.Exit(1)
	}
}

func agree(contourDir, portcullis string, keep bool, run, recorded string) error {
	filter, err := regexp.Compile(run)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "contour-agreement-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "agreement: working in", tmp)
	} else {
		defer func() { _ = os.RemoveAll(tmp) }()
	}
	if recorded == "" {
		recorded = filepath.Join(tmp, "cases")
	}
	cases, err := readCases(recorded)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if len(cases) == 0 {
		if err := recordContour(contourDir, tmp, recorded); err != nil {
			return err
		}
		if cases, err = readCases(recorded); err != nil {
			return err
		}
	}
	var r report
	for _, c := range cases {
		if !filter.MatchString(c.Name) {
			continue
		}
		if len(c.Unmapped) > 0 {
			r.skip(c)
			continue
		}
		ours, err := translate(portcullis, tmp, c)
		if err != nil {
			r.failed = append(r.failed, fmt.Sprintf("%s: %v", c.Name, err))
			continue
		}
		r.compare(c, ours)
	}
	r.print()
	return nil
}

// recordContour runs Contour's tests, instrumented, in a copy of its
// module, and leaves the cases in recorded.
func recordContour(contourDir, tmp, recorded string) error {
	module := filepath.Join(tmp, "contour")
	if err := copyTree(contourDir, module); err != nil {
		return err
	}
	if err := instrument(filepath.Join(module, "internal", "dag")); err != nil {
		return err
	}
	if err := os.MkdirAll(recorded, 0o750); err != nil {
		return err
	}
	cmd := exec.Command("go", "test", "-count=1", "-run", contourTests, "./internal/dag") //nolint:gosec // our own arguments
	cmd.Dir = module
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "AGREEMENT_OUT="+recorded)
	var testOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &testOut, &testOut
	if err := cmd.Run(); err != nil {
		// Contour's assertions come after the recording: a failing
		// test still records its case, but say so.
		fmt.Fprintf(os.Stderr, "agreement: Contour's tests did not all pass (%v):\n%s\n", err, tail(testOut.String(), 40))
	}
	if files, _ := filepath.Glob(filepath.Join(recorded, "*.json")); len(files) == 0 {
		return fmt.Errorf("no case recorded; go test said:\n%s", tail(testOut.String(), 40))
	}
	return nil
}

// instrument adds the recording call after each build of the two test
// files, and our recording test file beside them.
func instrument(dir string) error {
	for _, name := range []string{"status_test.go", "builder_test.go"} {
		path := filepath.Join(dir, name)
		src, err := os.ReadFile(path) //nolint:gosec // the temporary copy
		if err != nil {
			return err
		}
		if !buildCall.Match(src) {
			return fmt.Errorf("%s: no `dag := builder.Build()` to record after (has Contour's test changed?)", name)
		}
		src = buildCall.ReplaceAll(src, []byte("${1}dag := builder.Build()\n${1}agreementRecord(t, &builder, tc.objs, dag)"))
		if err := os.WriteFile(path, src, 0o600); err != nil { //nolint:gosec // the temporary copy
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "zz_agreement_record_test.go"), recordTest, 0o600)
}

// copyTree copies Contour's module (read-only in the module cache) to dst,
// writable.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o750)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path) //nolint:gosec // the module cache
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o600) //nolint:gosec // into the temporary copy
	})
}

// contourCase is one case as record_test.go.txt writes it.
type contourCase struct {
	Name                      string   `json:"name"`
	RootNamespaces            []string `json:"rootNamespaces"`
	FallbackCertificate       string   `json:"fallbackCertificate"`
	EnableExternalNameService bool     `json:"enableExternalNameService"`
	Processors                []string `json:"processors"`
	Unmapped                  []string `json:"unmapped"`
	Objects                   string   `json:"objects"`
	Statuses                  []struct {
		Namespace string    `json:"namespace"`
		Name      string    `json:"name"`
		Condition condition `json:"condition"`
	} `json:"statuses"`
}

// condition is the Valid condition of an HTTPProxy, Contour's or ours (the
// same JSON).
type condition struct {
	Type     string         `json:"type"`
	Status   string         `json:"status"`
	Reason   string         `json:"reason"`
	Message  string         `json:"message"`
	Errors   []subCondition `json:"errors"`
	Warnings []subCondition `json:"warnings"`
}

type subCondition struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func readCases(dir string) ([]contourCase, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []contourCase
	for _, f := range files {
		b, err := os.ReadFile(f) //nolint:gosec // recorded by us
		if err != nil {
			return nil, err
		}
		var c contourCase
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// translate runs portcullis translate on the case's objects and returns
// the Valid condition of each HTTPProxy, by namespace/name.
func translate(portcullis, tmp string, c contourCase) (map[string]condition, error) {
	file := filepath.Join(tmp, "case.yaml")
	if err := os.WriteFile(file, []byte(c.Objects), 0o600); err != nil {
		return nil, err
	}
	args := []string{"translate", "-o", "json", "-f", file}
	if len(c.RootNamespaces) > 0 {
		args = append(args, "--root-namespaces", strings.Join(c.RootNamespaces, ","))
	}
	if c.FallbackCertificate != "" {
		args = append(args, "--fallback-certificate", c.FallbackCertificate)
	}
	if c.EnableExternalNameService {
		args = append(args, "--enable-external-name-services")
	}
	var stderr bytes.Buffer
	cmd := exec.Command(portcullis, args...) //nolint:gosec // the binary the script built
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("portcullis translate: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var doc struct {
		Status []struct {
			Kind      string `json:"kind"`
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
			Status    struct {
				Conditions []condition `json:"conditions"`
			} `json:"status"`
		} `json:"status"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, err
	}
	got := map[string]condition{}
	for _, s := range doc.Status {
		if s.Kind != "HTTPProxy" {
			continue
		}
		for _, cond := range s.Status.Conditions {
			if cond.Type == "Valid" {
				got[s.Namespace+"/"+s.Name] = cond
			}
		}
	}
	return got, nil
}

type report struct {
	cases, proxies, verdicts, reasons, covered, warnings int
	skipped                                              map[string]int
	failed                                               []string
	disagreements                                        []string
}

func (r *report) skip(c contourCase) {
	if r.skipped == nil {
		r.skipped = map[string]int{}
	}
	r.skipped[strings.Join(c.Unmapped, ", ")]++
}

func (r *report) compare(c contourCase, ours map[string]condition) {
	r.cases++
	for _, s := range c.Statuses {
		r.proxies++
		key := s.Namespace + "/" + s.Name
		theirs := s.Condition
		mine, ok := ours[key]
		if !ok {
			mine = condition{Status: "(no status)"}
		}
		verdict := theirs.Status == mine.Status
		reasons := reasonSet(theirs.Errors) == reasonSet(mine.Errors)
		mine.Warnings = withoutEndpoints(mine.Warnings)
		warnings := reasonSet(theirs.Warnings) == reasonSet(mine.Warnings)
		if verdict {
			r.verdicts++
		}
		if verdict && reasons {
			r.reasons++
		}
		if verdict && subset(theirs.Errors, mine.Errors) {
			r.covered++
		}
		if warnings {
			r.warnings++
		}
		if verdict && reasons && warnings {
			continue
		}
		var what []string
		if !verdict {
			what = append(what, "verdict")
		}
		if !reasons {
			what = append(what, "error reasons")
		}
		if !warnings {
			what = append(what, "warning reasons")
		}
		r.disagreements = append(r.disagreements, fmt.Sprintf("%s\n  HTTPProxy %s (%s differ)\n  Contour: %s\n  ours:    %s",
			c.Name, key, strings.Join(what, ", "), describe(theirs), describe(mine)))
	}
}

// withoutEndpoints leaves out our warnings that a Service has no ready
// endpoints: Contour writes none (its DAG does not look at endpoints), and
// its tests give none.
func withoutEndpoints(subs []subCondition) []subCondition {
	var out []subCondition
	for _, s := range subs {
		if s.Type == "ServiceError" && s.Reason == "NoEndpoints" {
			continue
		}
		out = append(out, s)
	}
	return out
}

// subset reports whether every type/reason of theirs is one of mine.
func subset(theirs, mine []subCondition) bool {
	have := map[string]bool{}
	for _, m := range mine {
		have[m.Type+"/"+m.Reason] = true
	}
	for _, t := range theirs {
		if !have[t.Type+"/"+t.Reason] {
			return false
		}
	}
	return true
}

// reasonSet is the sorted set of a condition's sub-conditions' type/reason.
func reasonSet(subs []subCondition) string {
	set := map[string]bool{}
	for _, s := range subs {
		set[s.Type+"/"+s.Reason] = true
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, " ")
}

func describe(c condition) string {
	s := "Valid=" + c.Status
	for _, e := range c.Errors {
		s += fmt.Sprintf("\n    error   %s/%s: %s", e.Type, e.Reason, e.Message)
	}
	for _, w := range c.Warnings {
		s += fmt.Sprintf("\n    warning %s/%s: %s", w.Type, w.Reason, w.Message)
	}
	return s
}

func (r *report) print() {
	pct := func(n int) string {
		if r.proxies == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(r.proxies))
	}
	fmt.Printf("cases compared:               %d\n", r.cases)
	fmt.Printf("HTTPProxies compared:         %d\n", r.proxies)
	fmt.Printf("verdict agreement:            %d/%d (%s)  valid or not\n", r.verdicts, r.proxies, pct(r.verdicts))
	fmt.Printf("reason agreement:             %d/%d (%s)  same verdict and the same set of error type/reason\n", r.reasons, r.proxies, pct(r.reasons))
	fmt.Printf("Contour's reasons among ours: %d/%d (%s)  same verdict, and each of Contour's error type/reason is one of ours (Contour stops at a host's first error; we report them all)\n", r.covered, r.proxies, pct(r.covered))
	fmt.Printf("warning agreement:            %d/%d (%s)  the same set of warning type/reason (ours of no ready endpoints left out)\n", r.warnings, r.proxies, pct(r.warnings))
	skipped := 0
	for _, n := range r.skipped {
		skipped += n
	}
	fmt.Printf("cases skipped:                %d (Contour's builder configured in ways translate has no flag for)\n", skipped)
	reasons := make([]string, 0, len(r.skipped))
	for k := range r.skipped {
		reasons = append(reasons, k)
	}
	sort.Strings(reasons)
	for _, k := range reasons {
		fmt.Printf("  %3d  %s\n", r.skipped[k], k)
	}
	if len(r.failed) > 0 {
		fmt.Printf("cases translate failed on: %d\n", len(r.failed))
		for _, f := range r.failed {
			fmt.Println("  " + f)
		}
	}
	fmt.Printf("\ndisagreements: %d\n", len(r.disagreements))
	for _, d := range r.disagreements {
		fmt.Println()
		fmt.Println(d)
	}
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
