package builder

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// headersPolicy validates a headers policy. Host may only be set on
// requests, where it rewrites the authority.
func headersPolicy(hp *contourv1.HeadersPolicy, request bool) (*ir.HeadersPolicy, error) {
	if hp == nil {
		return nil, nil
	}
	out := &ir.HeadersPolicy{}
	seen := map[string]bool{}
	for _, h := range hp.Set {
		key := strings.ToLower(h.Name)
		if seen[key] {
			return nil, fmt.Errorf("duplicate header addition: %q", h.Name)
		}
		seen[key] = true
		if msgs := validation.IsHTTPHeaderName(h.Name); len(msgs) > 0 {
			return nil, fmt.Errorf("invalid set header %q: %s", h.Name, strings.Join(msgs, "; "))
		}
		if strings.ContainsAny(h.Value, "\r\n\x00") {
			return nil, fmt.Errorf("invalid set header %q: the value contains a line break or a NUL byte (Envoy rejects them)", h.Name)
		}
		if key == "host" {
			if !request {
				return nil, fmt.Errorf("rewriting %q header is not supported", h.Name)
			}
			out.HostRewrite = h.Value
			continue
		}
		out.Set = append(out.Set, ir.HeaderValue{Name: h.Name, Value: h.Value})
	}
	seen = map[string]bool{}
	for _, name := range hp.Remove {
		key := strings.ToLower(name)
		if seen[key] {
			return nil, fmt.Errorf("duplicate header removal: %q", name)
		}
		seen[key] = true
		if msgs := validation.IsHTTPHeaderName(name); len(msgs) > 0 {
			return nil, fmt.Errorf("invalid remove header %q: %s", name, strings.Join(msgs, "; "))
		}
		if key == "host" {
			return nil, fmt.Errorf("removing %q header is not supported", name)
		}
		out.Remove = append(out.Remove, name)
	}
	return out, nil
}
