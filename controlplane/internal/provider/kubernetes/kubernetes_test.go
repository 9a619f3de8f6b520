package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

func TestStatusOnly(t *testing.T) {
	proxy := func(gen int64, ann map[string]string, st string) *contourv1.HTTPProxy {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Generation: gen, UID: "u1", Annotations: ann}, Status: contourv1.HTTPProxyStatus{CurrentStatus: st}}
	}
	with := func(p *contourv1.HTTPProxy, f func(*contourv1.HTTPProxy)) *contourv1.HTTPProxy { f(p); return p }
	tests := []struct {
		name     string
		old, cur any
		want     bool
	}{
		{"status write", proxy(2, nil, ""), proxy(2, nil, "valid"), true},
		{"spec change", proxy(2, nil, "valid"), proxy(3, nil, "valid"), false},
		{"annotation change", proxy(2, nil, "valid"), proxy(2, map[string]string{"a": "b"}, "valid"), false},
		{"label change", proxy(2, nil, "valid"), with(proxy(2, nil, "valid"), func(p *contourv1.HTTPProxy) { p.Labels = map[string]string{"a": "b"} }), false},
		{"deleted and created again", proxy(1, nil, "valid"), with(proxy(1, nil, "valid"), func(p *contourv1.HTTPProxy) { p.UID = "u2" }), false},
		{"no generation (not from the API server)", proxy(0, nil, ""), proxy(0, nil, "valid"), false},
		{"other kinds always count", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := statusOnly(tt.old, tt.cur); got != tt.want {
				t.Errorf("statusOnly = %v, want %v", got, tt.want)
			}
		})
	}
}
