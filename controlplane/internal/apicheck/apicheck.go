// Package apicheck holds the checks of API values that both the
// configuration file (internal/config) and the resources (internal/builder)
// carry, so that both accept exactly the same values: timeouts, external
// processors, the defaults the API declares.
package apicheck

import (
	"fmt"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
)

// DefaultMaxRequestBytes is the API's default for withRequestBody's
// maxRequestBytes, applied where no API server applies it (files, the
// configuration file).
const DefaultMaxRequestBytes = 1024

// ParseTimeout reads a timeout of the configuration file or of a resource:
// a non-negative Go duration, "infinity" or "infinite" (the CRDs accept
// both; no timeout, returned as 0), or "" (unset, returned as nil).
func ParseTimeout(s string) (*time.Duration, error) {
	if s == "" {
		return nil, nil
	}
	if s == "infinity" || s == "infinite" {
		d := time.Duration(0)
		return &d, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a duration (e.g. 500ms, 2s) or \"infinity\"", s)
	}
	if d < 0 {
		return nil, fmt.Errorf("%q is negative", s)
	}
	return &d, nil
}

// CheckExtProc validates the static parts of an external processor: the
// extensionRef's shape, the timeout and the enums. where prefixes each
// message; needRef says whether grpcService.extensionRef.name is required
// (it is for a processor, not for route overrides, which may keep the
// inherited service).
func CheckExtProc(p *contourv1.ExtProc, where string, needRef bool) []string {
	if p == nil {
		return nil
	}
	var errs []string
	add := func(field, format string, args ...any) {
		errs = append(errs, where+"."+field+": "+fmt.Sprintf(format, args...))
	}
	checkExtProcService(p.GRPCService, needRef, add)
	if m := p.ProcessingMode; m != nil {
		checkProcessingMode(m, add)
	}
	return errs
}

// addFunc records a problem with a field.
type addFunc func(field, format string, args ...any)

// checkExtProcService checks the processor's grpcService: its
// extensionRef's shape and its timeout.
func checkExtProcService(g *contourv1.GRPCService, needRef bool, add addFunc) {
	switch {
	case g == nil && needRef:
		add("grpcService", "is required (extensionRef of an ExtensionService)")
	case g != nil:
		ref := g.ExtensionServiceRef
		if ref.Name == "" && needRef {
			add("grpcService.extensionRef.name", "is required")
		}
		if ref.APIVersion != "" && ref.APIVersion != v1alpha1.GroupVersion.String() {
			add("grpcService.extensionRef.apiVersion", "%q is not supported: use %q", ref.APIVersion, v1alpha1.GroupVersion.String())
		}
		if ref.Kind != "" && ref.Kind != "ExtensionService" {
			add("grpcService.extensionRef.kind", "%q is not supported: use ExtensionService", ref.Kind)
		}
		if _, err := ParseTimeout(g.ResponseTimeout); err != nil {
			add("grpcService.responseTimeout", "%v", err)
		}
	}
}

// checkProcessingMode checks the enums of the processing mode.
func checkProcessingMode(m *contourv1.ProcessingMode, add addFunc) {
	for _, h := range []struct {
		field string
		v     contourv1.HeaderSendMode
	}{
		{"requestHeaderMode", m.RequestHeaderMode}, {"responseHeaderMode", m.ResponseHeaderMode},
		{"requestTrailerMode", m.RequestTrailerMode}, {"responseTrailerMode", m.ResponseTrailerMode},
	} {
		switch h.v {
		case "", contourv1.ProcessingModeDefault, contourv1.ProcessingModeSend, contourv1.ProcessingModeSkip:
		default:
			add("processingMode."+h.field, "%q is not one of DEFAULT, SEND, SKIP", h.v)
		}
	}
	for _, b := range []struct {
		field string
		v     contourv1.BodySendMode
	}{{"requestBodyMode", m.RequestBodyMode}, {"responseBodyMode", m.ResponseBodyMode}} {
		switch b.v {
		case "", contourv1.ProcessingModeNone, contourv1.ProcessingModeStreamed, contourv1.ProcessingModeBuffered, contourv1.ProcessingModeBufferedPartial:
		default:
			add("processingMode."+b.field, "%q is not one of NONE, STREAMED, BUFFERED, BUFFERED_PARTIAL", b.v)
		}
	}
}
