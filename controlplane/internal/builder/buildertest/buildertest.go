// Package buildertest holds the helpers the builder packages' tests share.
package buildertest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// CheckResult checks a validator's result: an error containing wantErr
// when it is set, else no error and got deeply equal to want.
func CheckResult[T any](t testing.TB, got T, err error, want T, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one containing %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// ReasonOf is the reason of st's only error ("" for none, "many" for more).
func ReasonOf(st *status.Object) string {
	switch len(st.Errors) {
	case 0:
		return ""
	case 1:
		return st.Errors[0].Reason
	}
	return "many"
}
