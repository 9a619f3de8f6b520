package statuswriter

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

func TestUpdateJSON(t *testing.T) {
	for _, tc := range []struct {
		u    Update
		want string
	}{
		{Update{Ref: objects.Ref{Kind: objects.KindHTTPProxy, Namespace: "a", Name: "p"}, HTTPProxy: &contourv1.HTTPProxyStatus{CurrentStatus: "valid"}},
			`{"apiVersion":"projectcontour.io/v1","kind":"HTTPProxy","namespace":"a","name":"p","status":{"currentStatus":"valid"`},
		{Update{Ref: objects.Ref{Kind: objects.KindExtensionService, Namespace: "a", Name: "e"}, ExtensionService: &v1alpha1.ExtensionServiceStatus{}},
			`{"apiVersion":"projectcontour.io/v1alpha1","kind":"ExtensionService","namespace":"a","name":"e","status":{`},
		{Update{Ref: objects.Ref{Kind: objects.KindTLSCertificateDelegation, Namespace: "a", Name: "d"}, Delegation: &contourv1.TLSCertificateDelegationStatus{}},
			`{"apiVersion":"projectcontour.io/v1","kind":"TLSCertificateDelegation","namespace":"a","name":"d","status":{`},
	} {
		b, err := json.Marshal(tc.u)
		if err != nil || !strings.HasPrefix(string(b), tc.want) {
			t.Errorf("%s: %s (%v), want it to start with %s", tc.u.Ref, b, err, tc.want)
		}
	}
}

// The log writer logs a status once, and again only when it changes.
func TestLogWritesChanges(t *testing.T) {
	var buf bytes.Buffer
	l := &Log{Log: slog.New(slog.NewTextHandler(&buf, nil))}
	ref := objects.Ref{Kind: objects.KindHTTPProxy, Namespace: "a", Name: "p"}
	valid := Update{Ref: ref, HTTPProxy: &contourv1.HTTPProxyStatus{CurrentStatus: "valid"}}
	invalid := Update{Ref: ref, HTTPProxy: &contourv1.HTTPProxyStatus{CurrentStatus: "invalid"}}
	for _, batch := range [][]Update{{valid}, {valid}, nil, {invalid}, {invalid}} {
		l.Write(context.Background(), batch)
	}
	if n := strings.Count(buf.String(), "HTTPProxy a/p"); n != 2 {
		t.Errorf("logged %d times, want 2 (first status, then the change):\n%s", n, buf.String())
	}
}
