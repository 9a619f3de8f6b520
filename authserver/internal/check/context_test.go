package check_test

import (
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/portcullis/portcullis/authserver/internal/check"
)

func TestContextHeaderName(t *testing.T) {
	for in, want := range map[string]string{
		"key1":               "Auth-Context-Key1",
		"Key1":               "Auth-Context-Key1",
		"KEY1":               "Auth-Context-Key1",
		"team_name":          "Auth-Context-Team-Name",
		"hostname":           "Auth-Context-Hostname",
		"example.com/tenant": "Auth-Context-Example-Com-Tenant",
		"with space":         "Auth-Context-With-Space",
		"ünïcode":            "Auth-Context---N--Code",
		"":                   "",
		"_./":                "",
	} {
		if got := check.ContextHeaderName(in); got != want {
			t.Errorf("ContextHeaderName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContextHeaders(t *testing.T) {
	got, err := check.ContextHeaders(map[string]string{
		"team_name": "a", "team-name": "b", "tier": "gold", "_./": "dropped",
		"backend.portcullis.dev/realm": "reserved",
	}, "backend.portcullis.dev/")
	if err != nil {
		t.Fatal(err)
	}
	want := []check.Header{{"Auth-Context-Team-Name", "b, a"}, {"Auth-Context-Tier", "gold"}}
	if !slices.Equal(got, want) {
		t.Errorf("ContextHeaders = %v, want %v", got, want)
	}
	if _, err := check.ContextHeaders(map[string]string{"k": "a\r\nX-Injected: 1"}, ""); err == nil {
		t.Error("ContextHeaders accepted a value with CR/LF")
	}
}

func TestRequestHeader(t *testing.T) {
	req := request(map[string]string{"authorization": "Basic abc"})
	if v, ok := check.RequestHeader(req, "Authorization"); !ok || v != "Basic abc" {
		t.Errorf("from the headers map: %q, %v", v, ok)
	}
	raw := request(nil)
	raw.Attributes.Request.Http.HeaderMap = &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
		{Key: "x-other", RawValue: []byte("1")}, {Key: "authorization", RawValue: []byte("Basic \xff")}}}
	if v, ok := check.RequestHeader(raw, "authorization"); !ok || v != "Basic \xff" {
		t.Errorf("from the raw header map: %q, %v", v, ok)
	}
	if _, ok := check.RequestHeader(request(nil), "authorization"); ok {
		t.Error("absent header reported present")
	}
}
