package extension

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis/portcullis/controlplane/internal/config"
)

// FromConfig are the registrations of the configuration file's extensions
// section, in order, validated together (ValidateAll): every problem at
// once, each naming its field (extensions[0].address...).
func FromConfig(c *config.Config) ([]Registration, error) {
	var regs []Registration
	var msgs []string
	for i := range c.Extensions {
		e := &c.Extensions[i]
		where := fmt.Sprintf("extensions[%d]", i)
		timeout, budget, errs := e.Durations(where)
		retry, retryErrs := retryOf(e.Retry, where)
		errs = append(errs, retryErrs...)
		msgs = append(msgs, errs...)
		r := Registration{
			Name:             e.Name,
			Where:            where,
			Address:          e.Address,
			Service:          e.ExtensionService,
			Timeout:          timeout,
			FailurePolicy:    FailurePolicy(e.FailurePolicy),
			MaxMessageSize:   e.MaxMessageSize,
			PhaseBudget:      budget,
			MaxConcurrency:   e.MaxConcurrency,
			Resources:        gvks(e.Resources),
			BackendResources: gvks(e.BackendResources),
			PolicyResources:  gvks(e.PolicyResources),
			Dialect:          Dialect(e.Dialect),
			Translation:      translation(e.Translation),
			Retry:            retry,

			AllowLocalEndpoints: e.AllowLocalEndpoints,
			MayRemoveAll:        e.MayRemoveAll,
		}
		if t := e.TLS; t != nil {
			r.TLS = &TLS{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName,
				CASecret: t.CASecret, ClientSecret: t.ClientCertificateSecret}
		}
		for _, h := range e.Hooks {
			r.Hooks = append(r.Hooks, Hook(h))
		}
		if len(errs) > 0 {
			// Its zero durations would only be compared again (its
			// problems are said).
			continue
		}
		regs = append(regs, r)
	}
	if err := ValidateAll(regs); err != nil {
		for _, e := range flatten(err) {
			msgs = append(msgs, e.Error())
		}
	}
	if len(msgs) > 0 {
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	return regs, nil
}

// translation is the registration's Translation of the file's; nil for
// none.
func translation(in *config.ExtensionTranslation) *Translation {
	if in == nil {
		return nil
	}
	include := func(i *config.TranslationInclude, def bool) bool {
		if i == nil || i.IncludeAll == nil {
			return def
		}
		return *i.IncludeAll
	}
	d := DefaultTranslation
	return &Translation{
		Listeners: include(in.Listener, d.Listeners), Routes: include(in.Route, d.Routes),
		Clusters: include(in.Cluster, d.Clusters), Secrets: include(in.Secret, d.Secrets),
	}
}

func gvks(in []config.GroupVersionKind) []schema.GroupVersionKind {
	if len(in) == 0 {
		return nil
	}
	out := make([]schema.GroupVersionKind, len(in))
	for i, k := range in {
		out[i] = schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
	}
	return out
}

// flatten is the errors of nested errors.Joins.
func flatten(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}
