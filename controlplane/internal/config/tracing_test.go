package config

import (
	"strings"
	"testing"
)

// Contour's tracing section, as its documentation writes it (the
// sampling a string), reads as ours.
func TestParseTracingContourShape(t *testing.T) {
	c, err := Parse([]byte(`
tracing:
  includePodDetail: true
  extensionService: projectcontour/otel-collector
  serviceName: some-service-name
  overallSampling: "50.5"
  maxPathTagLength: 100
  customTags:
  - tagName: custom-tag
    literal: foo
  - tagName: header-tag
    requestHeaderName: X-Custom-Header
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tr := c.Tracing
	if ns, name := tr.Ref(); ns != "projectcontour" || name != "otel-collector" {
		t.Errorf("ref = %s/%s", ns, name)
	}
	if tr.ServiceName != "some-service-name" || *tr.OverallSampling != 50.5 || *tr.MaxPathTagLength != 100 || !tr.IncludePodDetail ||
		len(tr.CustomTags) != 2 || tr.CustomTags[0].Literal != "foo" || tr.CustomTags[1].RequestHeaderName != "X-Custom-Header" {
		t.Errorf("decoded %+v", tr)
	}
	c, err = Parse([]byte("tracing: {extensionService: a/b, overallSampling: 10}\n"), "c.yaml")
	if err != nil || *c.Tracing.OverallSampling != 10 {
		t.Errorf("a number: %+v, %v", c, err)
	}
}

func TestParseTracingErrors(t *testing.T) {
	long := strings.Repeat("a", 257)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"no collector", "tracing: {serviceName: s}", `tracing.extensionService: is required`},
		{"collector without namespace", "tracing: {extensionService: otel}", `tracing.extensionService: must be namespace/name, got "otel"`},
		{"sampling above 100", "tracing: {extensionService: a/b, overallSampling: 101}", `tracing.overallSampling: must be from 0 to 100, got 101`},
		{"sampling below 0", "tracing: {extensionService: a/b, overallSampling: '-1'}", `tracing.overallSampling: must be from 0 to 100, got -1`},
		{"sampling not a number", "tracing: {extensionService: a/b, overallSampling: all}", `tracing.overallSampling: must be a percentage from 0 to 100`},
		{"sampling a boolean", "tracing: {extensionService: a/b, overallSampling: true}", `tracing.overallSampling: must be a percentage from 0 to 100`},
		{"path tag length 0", "tracing: {extensionService: a/b, maxPathTagLength: 0}", `tracing.maxPathTagLength: must be from 1 to 8192, got 0`},
		{"path tag length too long", "tracing: {extensionService: a/b, maxPathTagLength: 100000}", `tracing.maxPathTagLength: must be from 1 to 8192`},
		{"path tag length negative", "tracing: {extensionService: a/b, maxPathTagLength: -1}", `tracing.maxPathTagLength: must be of type integer`},
		{"tag without name", "tracing: {extensionService: a/b, customTags: [{literal: x}]}", `tracing.customTags[0].tagName: is required`},
		{"tag with both", "tracing: {extensionService: a/b, customTags: [{tagName: t, literal: x, requestHeaderName: v}]}", `tracing.customTags[0]: set exactly one of literal and requestHeaderName`},
		{"tag with neither", "tracing: {extensionService: a/b, customTags: [{tagName: t}]}", `tracing.customTags[0]: set exactly one of literal and requestHeaderName`},
		{"tag twice", "tracing: {extensionService: a/b, customTags: [{tagName: t, literal: x}, {tagName: t, literal: w}]}", `tracing.customTags[1].tagName: "t" is already a tag`},
		{"tag of the pod detail", "tracing: {extensionService: a/b, includePodDetail: true, customTags: [{tagName: podName, literal: x}]}", `tracing.customTags[0].tagName: "podName" is already a tag`},
		{"bad header name", "tracing: {extensionService: a/b, customTags: [{tagName: t, requestHeaderName: 'x y'}]}", `tracing.customTags[0].requestHeaderName: must be an HTTP header name, got "x y"`},
		{"tag name too long", "tracing: {extensionService: a/b, customTags: [{tagName: " + long + ", literal: x}]}", `tracing.customTags[0].tagName: must be at most 256 characters`},
		{"too many tags", "tracing: {extensionService: a/b, customTags: [" + strings.Repeat("{tagName: t, literal: x},", 65) + "]}", `tracing.customTags: at most 64 tags, got 65`},
		{"access log format", "accessLog: {format: envoy}", `accessLog.format: must be text or json, got "envoy"`},
		{"access log unknown field", "accessLog: {jsonFields: [a]}", `accessLog.jsonFields: unknown field`},
		{"unknown field (Contour's CRD spelling)", "tracing: {extensionService: a/b, requestHeader: x}", `tracing.requestHeader: unknown field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in), "c.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
