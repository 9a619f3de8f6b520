package core

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// HeadersPolicy validates a headers policy. Host may only be set on
// requests, where it rewrites the authority.
func HeadersPolicy(hp *contourv1.HeadersPolicy, request bool) (*ir.HeadersPolicy, error) {
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
		if err := HeaderValueValid("set", h.Name, h.Value); err != nil {
			return nil, err
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
		if err := HeaderValueValid("remove", name, ""); err != nil {
			return nil, err
		}
		if key == "host" {
			return nil, fmt.Errorf("removing %q header is not supported", name)
		}
		out.Remove = append(out.Remove, name)
	}
	return out, nil
}

// HeaderValueValid checks one header a policy sets, adds ("verb") or
// removes: a valid name, and a value Envoy accepts.
func HeaderValueValid(verb, name, value string) error {
	if msgs := validation.IsHTTPHeaderName(name); len(msgs) > 0 {
		return fmt.Errorf("invalid %s header %q: %s", verb, name, strings.Join(msgs, "; "))
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return fmt.Errorf("invalid %s header %q: the value contains a line break or a NUL byte (Envoy rejects them)", verb, name)
	}
	return nil
}
