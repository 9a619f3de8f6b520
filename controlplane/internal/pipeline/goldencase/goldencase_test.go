package goldencase

import (
	"path/filepath"
	"testing"
)

// Runnable leaves out exactly the cases whose golden is a load error, and
// each of those really does not load (so no case is left out by mistake).
func TestRunnable(t *testing.T) {
	all, err := Dirs("../testdata")
	if err != nil {
		t.Fatal(err)
	}
	run, err := Runnable("../testdata")
	if err != nil {
		t.Fatal(err)
	}
	runnable := map[string]bool{}
	for _, d := range run {
		runnable[d] = true
	}
	errorCases := 0
	for _, d := range all {
		_, loadErr := Load(d)
		switch {
		case runnable[d] && loadErr != nil:
			t.Errorf("%s is runnable but does not load: %v", filepath.Base(d), loadErr)
		case !runnable[d] && loadErr == nil:
			t.Errorf("%s is left out as a load error but loads", filepath.Base(d))
		case !runnable[d]:
			errorCases++
		}
	}
	if errorCases == 0 || len(run) < 30 {
		t.Errorf("%d runnable cases and %d load-error cases: the testdata is not what this test expects", len(run), errorCases)
	}
}
