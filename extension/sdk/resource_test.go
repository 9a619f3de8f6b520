package sdk_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
)

const retryPolicyJSON = `{
  "apiVersion": "example.vendor.io/v1",
  "kind": "RetryPolicy",
  "metadata": {"name": "fast", "namespace": "default", "uid": "8f1c", "generation": 2},
  "spec": {"attempts": 3, "on": ["5xx", "reset"]},
  "status": {"observedGeneration": 2}
}`

// RetryPolicy is a vendor's Go type of its resource.
type RetryPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RetryPolicySpec   `json:"spec"`
	Status            RetryPolicyStatus `json:"status,omitempty"`
}

type RetryPolicySpec struct {
	Attempts int      `json:"attempts"`
	On       []string `json:"on,omitempty"`
}

type RetryPolicyStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

func res(s string) *v1alpha1.ExtensionResource {
	return &v1alpha1.ExtensionResource{UnstructuredJson: []byte(s)}
}

func TestUnstructured(t *testing.T) {
	tests := []struct {
		name    string
		in      *v1alpha1.ExtensionResource
		wantErr string
	}{
		{name: "object", in: res(retryPolicyJSON)},
		{name: "nil", in: nil, wantErr: "empty"},
		{name: "empty", in: res(""), wantErr: "empty"},
		{name: "no kind", in: res(`{"apiVersion": "example.vendor.io/v1", "metadata": {"name": "fast"}}`), wantErr: "Kind' is missing"},
		{name: "not JSON", in: res(`apiVersion: v1`), wantErr: "invalid character"},
		{name: "not an object", in: res(`["RetryPolicy"]`), wantErr: "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := sdk.Unstructured(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.GetKind() != "RetryPolicy" || u.GetNamespace() != "default" || u.GetName() != "fast" {
				t.Errorf("got %s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
			}
			attempts, found, err := unstructured.NestedInt64(u.Object, "spec", "attempts")
			if err != nil || !found || attempts != 3 {
				t.Errorf("spec.attempts = %d, %v, %v", attempts, found, err)
			}
		})
	}
}

func TestGroupVersionKind(t *testing.T) {
	gvk, err := sdk.GroupVersionKind(res(retryPolicyJSON))
	if err != nil {
		t.Fatal(err)
	}
	if want := (schema.GroupVersionKind{Group: "example.vendor.io", Version: "v1", Kind: "RetryPolicy"}); gvk != want {
		t.Errorf("got %v, want %v", gvk, want)
	}
	if _, err := sdk.GroupVersionKind(res("")); err == nil {
		t.Error("empty resource: no error")
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		wantErr []string // substrings
	}{
		{name: "object", json: retryPolicyJSON},
		{name: "unknown field", json: `{"kind": "RetryPolicy", "spec": {"attempts": 3, "backoff": "1s"}}`,
			wantErr: []string{"strict decoding", `unknown field "spec.backoff"`}},
		{name: "two unknown fields", json: `{"kind": "RetryPolicy", "spec": {"attempts": 3, "backoff": "1s"}, "extra": true}`,
			wantErr: []string{`unknown field "spec.backoff"`, `unknown field "extra"`}},
		{name: "duplicate field", json: `{"kind": "RetryPolicy", "spec": {"attempts": 3, "attempts": 4}}`,
			wantErr: []string{`duplicate field "spec.attempts"`}},
		{name: "field case", json: `{"kind": "RetryPolicy", "spec": {"Attempts": 3}}`,
			wantErr: []string{`unknown field "spec.Attempts"`}},
		{name: "wrong type", json: `{"kind": "RetryPolicy", "spec": {"attempts": "three"}}`,
			wantErr: []string{"cannot unmarshal string"}},
		{name: "empty", json: "", wantErr: []string{"empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p RetryPolicy
			err := sdk.Decode(res(tt.json), &p)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, want one containing %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("err = %v, want one containing %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := RetryPolicySpec{Attempts: 3, On: []string{"5xx", "reset"}}
			if p.Kind != "RetryPolicy" || p.Name != "fast" || p.Generation != 2 || p.Spec.Attempts != want.Attempts ||
				strings.Join(p.Spec.On, ",") != strings.Join(want.On, ",") || p.Status.ObservedGeneration != 2 {
				t.Errorf("got %+v", p)
			}
		})
	}
}

func TestDecodeAs(t *testing.T) {
	p, err := sdk.DecodeAs[RetryPolicy](res(retryPolicyJSON))
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Attempts != 3 {
		t.Errorf("spec.attempts = %d", p.Spec.Attempts)
	}
	if _, err := sdk.DecodeAs[RetryPolicy](res(`{"spec": {"retries": 1}}`)); err == nil {
		t.Error("unknown field: no error")
	}
}
