package config

// AccessLog has Envoy write one line per request to its standard output,
// with the external authorization's decision, reason and user and the
// trace ID (docs/tracing.md documents the fields). Off without the
// section.
type AccessLog struct {
	// Format is text (the default: one line of fields, Envoy's own
	// layout extended) or json (one JSON object per line, the same
	// fields).
	Format AccessLogFormat `json:"format,omitempty"`
}

// AccessLogFormat is accessLog.format.
type AccessLogFormat string

// The values of accessLog.format.
const (
	AccessLogText AccessLogFormat = "text"
	AccessLogJSON AccessLogFormat = "json"
)

func (p *problems) accessLog(a *AccessLog) {
	if a != nil && a.Format != "" && a.Format != AccessLogText && a.Format != AccessLogJSON {
		p.add("accessLog.format", "must be %s or %s, got %q", AccessLogText, AccessLogJSON, a.Format)
	}
}
