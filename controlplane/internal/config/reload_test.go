package config

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

const (
	authOne = "globalExtAuth: {extensionService: ns/one}\n"
	procOne = "globalExtProc: {processor: {grpcService: {extensionRef: {name: p, namespace: ns}}}}\n"
)

// A reload may turn global authorization or processing off only when the
// file says so (disabled: true): an empty document, a file that lost the
// section, or the section left null ("globalExtAuth:" with nothing under
// it, as a write cut short leaves it) keeps the last good configuration,
// reports the problem and logs a warning. Each applied reload logs one
// line per changed section, and none for the others.
func TestReloadNeedsExplicitDisable(t *testing.T) {
	for _, tc := range []struct {
		name, inForce, next string
		// applied: the new version is delivered; else lost names the
		// sections of the LostSectionError (nil: another error).
		applied bool
		lost    []string
		// logs are the "configuration reloaded" lines expected (their
		// section=... change=... part), in order.
		logs []string
	}{
		{name: "empty document", inForce: authOne, next: "", lost: []string{"globalExtAuth"}},
		{name: "only comments", inForce: authOne, next: "# being written\n", lost: []string{"globalExtAuth"}},
		{name: "lost section", inForce: "limits: {maxIncludeDepth: 3}\n" + authOne, next: "limits: {maxIncludeDepth: 3}\n", lost: []string{"globalExtAuth"}},
		{name: "section left null", inForce: authOne, next: "globalExtAuth:\n", lost: []string{"globalExtAuth"}},
		{name: "section null", inForce: authOne, next: "globalExtAuth: null\n", lost: []string{"globalExtAuth"}},
		{name: "both lost", inForce: authOne + procOne, next: "", lost: []string{"globalExtAuth", "globalExtProc"}},
		{name: "processing lost", inForce: authOne + procOne, next: authOne, lost: []string{"globalExtProc"}},
		{name: "empty section", inForce: authOne, next: "globalExtAuth: {}\n"},
		{name: "explicit disable", inForce: authOne, next: "globalExtAuth: {disabled: true}\n", applied: true,
			logs: []string{"section=globalExtAuth change=disabled"}},
		{name: "processing disabled explicitly", inForce: authOne + procOne, next: authOne + "globalExtProc: {disabled: true}\n", applied: true,
			logs: []string{"section=globalExtProc change=disabled"}},
		{name: "real change", inForce: "limits: {maxIncludeDepth: 3}\n" + authOne, next: "limits: {maxIncludeDepth: 3}\nglobalExtAuth: {extensionService: ns/two}\n", applied: true,
			logs: []string{"section=globalExtAuth change=changed"}},
		{name: "added", inForce: "", next: authOne + "limits: {maxIncludeDepth: 3}\n", applied: true,
			logs: []string{"section=globalExtAuth change=added", "section=limits change=added"}},
		{name: "empty document after an explicit disable", inForce: "globalExtAuth: {disabled: true}\n", next: "", applied: true,
			logs: []string{"section=globalExtAuth change=removed"}},
		{name: "other section removed", inForce: authOne + "limits: {maxIncludeDepth: 3}\n", next: authOne, applied: true,
			logs: []string{"section=limits change=removed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			var delivered *Config
			var problem error
			w := &watcher{path: "c.yaml", log: slog.New(slog.NewTextHandler(&logs, nil)), s: settled{last: []byte(tc.inForce)},
				update: func(c *Config) { delivered = c }, problem: func(err error) { problem = err }}
			var err error
			if w.inForce, err = Parse([]byte(tc.inForce), "c.yaml"); err != nil {
				t.Fatal(err)
			}
			// Several polls: the content settles, then is read again.
			for range 4 {
				w.poll([]byte(tc.next), nil)
			}
			if got := delivered != nil; got != tc.applied {
				t.Fatalf("applied = %v, want %v (problem %v)", got, tc.applied, problem)
			}
			if tc.applied {
				if problem != nil {
					t.Errorf("problem %v after an applied reload", problem)
				}
				var got []string
				for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
					if strings.Contains(l, `msg="configuration reloaded"`) {
						got = append(got, l)
					}
				}
				if len(got) != len(tc.logs) {
					t.Fatalf("reload log lines:\n%s\nwant %d: %q", strings.Join(got, "\n"), len(tc.logs), tc.logs)
				}
				for i, want := range tc.logs {
					if !strings.Contains(got[i], want) {
						t.Errorf("log line %d: %s, want %s", i, got[i], want)
					}
				}
				return
			}
			if problem == nil {
				t.Fatal("no problem reported for a refused version")
			}
			var lost *LostSectionError
			switch {
			case tc.lost == nil && errors.As(problem, &lost):
				t.Errorf("problem %v, want an invalid file", problem)
			case tc.lost != nil && !errors.As(problem, &lost):
				t.Fatalf("problem %v, want a LostSectionError", problem)
			case tc.lost != nil:
				if strings.Join(lost.Sections, ",") != strings.Join(tc.lost, ",") {
					t.Errorf("lost sections %v, want %v", lost.Sections, tc.lost)
				}
				if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(problem.Error(), "{disabled: true}") {
					t.Errorf("want a WARN line and the explicit form in the error; logs:\n%s", logs.String())
				}
				if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
					t.Errorf("%d WARN lines over several polls, want 1", n)
				}
			}
			// Back to the content in force: no problem any more.
			w.poll([]byte(tc.inForce), nil)
			if problem != nil {
				t.Errorf("problem %v once the file is back to the content in force", problem)
			}
		})
	}
}

// The first load keeps the empty file's meaning: no global policy.
func TestFirstLoadOfAnEmptyFile(t *testing.T) {
	c, err := Parse(nil, "c.yaml")
	if err != nil || c.GlobalExtAuth != nil {
		t.Fatalf("Parse(empty) = %+v, %v: want the empty configuration", c, err)
	}
	if err := CheckReload(nil, c, "c.yaml"); err != nil {
		t.Errorf("nothing in force: %v", err)
	}
}
