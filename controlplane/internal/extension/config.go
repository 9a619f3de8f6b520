package extension

import (
	"errors"
	"strings"

	"github.com/portcullis/portcullis/controlplane/internal/config"
)

// FromConfig is the Registration of the configuration file's extension
// section, validated: every problem at once, each naming its field
// (extension.address, extension.hooks...).
func FromConfig(c *config.Extension) (Registration, error) {
	timeout, budget, errs := c.Durations()
	if len(errs) > 0 {
		// Their zeros would only be compared again.
		return Registration{}, errors.New(strings.Join(errs, "; "))
	}
	r := Registration{
		Address:        c.Address,
		Timeout:        timeout,
		FailurePolicy:  FailurePolicy(c.FailurePolicy),
		MaxMessageSize: c.MaxMessageSize,
		PhaseBudget:    budget,
		MaxConcurrency: c.MaxConcurrency,
	}
	if t := c.TLS; t != nil {
		r.TLS = &TLS{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName}
	}
	for _, h := range c.Hooks {
		r.Hooks = append(r.Hooks, Hook(h))
	}
	if err := r.Validate(); err != nil {
		var msgs []string
		for _, e := range unjoin(err) {
			msgs = append(msgs, e.Error())
		}
		return Registration{}, errors.New(strings.Join(msgs, "; "))
	}
	return r, nil
}

// unjoin is the errors of an errors.Join.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
