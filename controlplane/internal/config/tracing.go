package config

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Tracing sends Envoy's spans to an OpenTelemetry collector over OTLP
// gRPC, shaped as Contour's tracing settings (its configuration file's
// tracing section): the collector is an ExtensionService, whose cluster
// Envoy exports to. Every HTTP connection manager traces, and Envoy
// passes the trace on to the authorization and processing servers it
// calls.
type Tracing struct {
	// ExtensionService is the collector, "namespace/name".
	ExtensionService string `json:"extensionService"`
	// ServiceName is the service.name of Envoy's spans (default
	// DefaultTracingServiceName).
	ServiceName string `json:"serviceName,omitempty"`
	// OverallSampling is the percentage of requests traced, 0 to 100
	// (default 100); a number, or a string as Contour's ("100").
	OverallSampling *SamplingPercent `json:"overallSampling,omitempty"`
	// MaxPathTagLength bounds the URL path in the spans' http.url tag
	// (default 256, Envoy's).
	MaxPathTagLength *uint32 `json:"maxPathTagLength,omitempty"`
	// IncludePodDetail tags every span with Envoy's pod: podName (from
	// the HOSTNAME environment variable) and podNamespaceName (from
	// POD_NAMESPACE, which the chart sets).
	IncludePodDetail bool `json:"includePodDetail,omitempty"`
	// CustomTags are added to every span: each a literal or a request
	// header's value.
	CustomTags []TracingCustomTag `json:"customTags,omitempty"`
}

// TracingCustomTag is one custom tag: exactly one of Literal and
// RequestHeaderName.
type TracingCustomTag struct {
	TagName           string `json:"tagName"`
	Literal           string `json:"literal,omitempty"`
	RequestHeaderName string `json:"requestHeaderName,omitempty"`
}

// Tracing defaults and bounds.
const (
	DefaultTracingServiceName = "portcullis"
	DefaultMaxPathTagLength   = 256
	// The bounds keep every span (and the tags Envoy copies into it on
	// every request) small.
	maxPathTagLength   = 8192
	maxTracingTags     = 64
	maxTagNameLength   = 256
	maxTagLiteralBytes = 1024
)

// Ref is the Namespace and Name of the collector's ExtensionService
// (valid after Parse).
func (t *Tracing) Ref() (namespace, name string) {
	ns, n, _ := strings.Cut(t.ExtensionService, "/")
	return ns, n
}

// SamplingPercent is a percentage read from a number or from a string
// holding one.
type SamplingPercent float64

// UnmarshalJSON reads 50, 50.5 or "50".
func (p *SamplingPercent) UnmarshalJSON(b []byte) error {
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil {
		if f, err := strconv.ParseFloat(string(n), 64); err == nil {
			*p = SamplingPercent(f)
			return nil
		}
	}
	return fmt.Errorf("tracing.overallSampling: must be a percentage from 0 to 100 (a number, or a string such as \"100\"), got %s", b)
}

func (p *problems) tracing(t *Tracing) {
	if t == nil {
		return
	}
	p.extensionServiceRef("tracing.extensionService", t.ExtensionService)
	if len(t.ServiceName) > maxTagNameLength {
		p.add("tracing.serviceName", "must be at most %d characters, got %d", maxTagNameLength, len(t.ServiceName))
	}
	if s := t.OverallSampling; s != nil && (*s < 0 || *s > 100) {
		p.add("tracing.overallSampling", "must be from 0 to 100, got %v", float64(*s))
	}
	if l := t.MaxPathTagLength; l != nil && (*l < 1 || *l > maxPathTagLength) {
		p.add("tracing.maxPathTagLength", "must be from 1 to %d, got %d", maxPathTagLength, *l)
	}
	if len(t.CustomTags) > maxTracingTags {
		p.add("tracing.customTags", "at most %d tags, got %d", maxTracingTags, len(t.CustomTags))
		return
	}
	seen := map[string]bool{}
	if t.IncludePodDetail {
		seen[PodNameTag], seen[PodNamespaceTag] = true, true
	}
	for i, c := range t.CustomTags {
		p.customTag(fmt.Sprintf("tracing.customTags[%d]", i), c, seen)
	}
}

// customTag checks one custom tag; seen are the tag names before it.
func (p *problems) customTag(where string, c TracingCustomTag, seen map[string]bool) {
	switch {
	case c.TagName == "":
		p.add(where+".tagName", "is required")
	case len(c.TagName) > maxTagNameLength:
		p.add(where+".tagName", "must be at most %d characters", maxTagNameLength)
	case seen[c.TagName]:
		p.add(where+".tagName", "%q is already a tag (each tag once; includePodDetail adds %s and %s)", c.TagName, PodNameTag, PodNamespaceTag)
	}
	seen[c.TagName] = true
	switch {
	case (c.Literal == "") == (c.RequestHeaderName == ""):
		p.add(where, "set exactly one of literal and requestHeaderName")
	case len(c.Literal) > maxTagLiteralBytes:
		p.add(where+".literal", "must be at most %d bytes", maxTagLiteralBytes)
	case c.RequestHeaderName != "" && len(validation.IsHTTPHeaderName(c.RequestHeaderName)) > 0:
		p.add(where+".requestHeaderName", "must be an HTTP header name, got %q", c.RequestHeaderName)
	}
}

// The tags of includePodDetail, as Contour names them.
const (
	PodNameTag      = "podName"
	PodNamespaceTag = "podNamespaceName"
)
