package core

import (
	"reflect"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/config"
)

func TestMergePolicy(t *testing.T) {
	global := contourv1.AuthorizationPolicy{Disabled: true, Context: map[string]string{"scope": "global", "a": "1"}}
	for _, tc := range []struct {
		name  string
		inner *contourv1.AuthorizationPolicy
		want  contourv1.AuthorizationPolicy
	}{
		{"no inner policy keeps the outer one", nil, global},
		{"inner disabled: false re-enables, context merges inner-wins",
			&contourv1.AuthorizationPolicy{Context: map[string]string{"scope": "host", "b": "2"}},
			contourv1.AuthorizationPolicy{Context: map[string]string{"scope": "host", "a": "1", "b": "2"}}},
		{"inner without context keeps the outer context",
			&contourv1.AuthorizationPolicy{Disabled: true},
			contourv1.AuthorizationPolicy{Disabled: true, Context: map[string]string{"scope": "global", "a": "1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MergePolicy(global, tc.inner); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("mergePolicy = %+v, want %+v", got, tc.want)
			}
		})
	}
	if global.Context["scope"] != "global" || len(global.Context) != 2 {
		t.Errorf("mergePolicy changed the outer context: %v", global.Context)
	}
}

// globalExtAuth: {disabled: true} is no global authorization at all.
func TestGlobalExtAuthDisabledIsNone(t *testing.T) {
	c, err := config.Parse([]byte("globalExtAuth: {disabled: true}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if o := (Options{}).WithConfig(c); o.GlobalExtAuth != nil {
		t.Errorf("GlobalExtAuth = %+v, want nil", o.GlobalExtAuth)
	}
}
