package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// Jaeger is a running Jaeger all-in-one (make tools builds it): OTLP in,
// its query API out, spans in memory.
type Jaeger struct {
	*Process
	// OTLPAddr takes OTLP over gRPC (host:port, plaintext).
	OTLPAddr string
	// QueryURL is the query API's base URL (http://host:port).
	QueryURL string
}

// StartJaeger runs Jaeger on free loopback ports (every one of its
// servers: parallel tests must not meet on its default ports) and waits
// until its query API answers.
func StartJaeger(t testing.TB) *Jaeger {
	t.Helper()
	j := &Jaeger{OTLPAddr: FreeAddr(t)}
	query := FreeAddr(t)
	j.QueryURL = "http://" + query
	j.Process = NewProcess(t, "jaeger", Tool(t, "jaeger-all-in-one"),
		"--collector.otlp.enabled=true",
		"--collector.otlp.grpc.host-port="+j.OTLPAddr,
		"--collector.otlp.http.host-port="+FreeAddr(t),
		"--collector.grpc-server.host-port="+FreeAddr(t),
		"--collector.http-server.host-port="+FreeAddr(t),
		"--query.http-server.host-port="+query,
		"--query.grpc-server.host-port="+FreeAddr(t),
		"--admin.http.host-port="+FreeAddr(t))
	j.Env = []string{"SPAN_STORAGE_TYPE=memory"}
	j.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := WaitHTTP(ctx, j.QueryURL+"/api/services", http.StatusOK); err != nil {
		t.Fatalf("jaeger query API: %v\n%s", err, j.Logs())
	}
	return j
}

// JaegerTrace is one trace as the query API returns it.
type JaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []JaegerSpan             `json:"spans"`
	Processes map[string]JaegerProcess `json:"processes"`
}

// JaegerSpan is one span of a JaegerTrace; times in microseconds.
type JaegerSpan struct {
	TraceID       string            `json:"traceID"`
	SpanID        string            `json:"spanID"`
	OperationName string            `json:"operationName"`
	References    []JaegerReference `json:"references"`
	StartTime     int64             `json:"startTime"`
	Duration      int64             `json:"duration"`
	Tags          []JaegerTag       `json:"tags"`
	ProcessID     string            `json:"processID"`
}

// JaegerReference links a span to its parent (refType CHILD_OF).
type JaegerReference struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

// JaegerTag is a span's attribute.
type JaegerTag struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// JaegerProcess is the service that recorded spans.
type JaegerProcess struct {
	ServiceName string `json:"serviceName"`
}

// Traces are the traces of service (recent first, at most 100).
func (j *Jaeger) Traces(service string) ([]JaegerTrace, error) {
	u := j.QueryURL + "/api/traces?" + url.Values{"service": {service}, "limit": {"100"}, "lookback": {"1h"}}.Encode()
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: status %d: %.300s", u, resp.StatusCode, body)
	}
	var out struct {
		Data []JaegerTrace `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("%s: %v", u, err)
	}
	return out.Data, nil
}

// Service is the name of the service that recorded s.
func (tr JaegerTrace) Service(s JaegerSpan) string { return tr.Processes[s.ProcessID].ServiceName }

// Parent is s's parent span in the trace; false for a root (or a parent
// not received).
func (tr JaegerTrace) Parent(s JaegerSpan) (JaegerSpan, bool) {
	for _, r := range s.References {
		if r.RefType != "CHILD_OF" {
			continue
		}
		for _, p := range tr.Spans {
			if p.SpanID == r.SpanID {
				return p, true
			}
		}
	}
	return JaegerSpan{}, false
}

// Tag is the value of s's tag key, as a string ("" when absent).
func (s JaegerSpan) Tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// Took is s's duration.
func (s JaegerSpan) Took() time.Duration { return time.Duration(s.Duration) * time.Microsecond }
