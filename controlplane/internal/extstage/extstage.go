// Package extstage is the extension hook stage of the control plane's
// pipeline, between the translator and the xDS server: `portcullis serve`
// runs it on every rebuild and `portcullis translate
// --show-extension-diff` once, through Run, with the same inputs (the
// build and the chain of registered extensions), so that what translate
// reports is what serve publishes.
package extstage

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis/portcullis/controlplane/internal/extension"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// Result is one run of the extension hook stage on a build.
type Result struct {
	// Before is the build as the translator made it; After the build with
	// the resources the extensions returned, nil when an extension whose
	// failure policy is Closed failed (publish nothing: the last good
	// configuration stays).
	Before, After *pipeline.Result
	// Failures are every failed hook call, in chain order.
	Failures []extension.Failure
	// Stages are Before's resources then each extension's output, in
	// chain order (nil for one that failed under Closed).
	Stages []*translator.Resources
	// Unreachable are the extensions registered through an
	// ExtensionService that is missing, invalid or has no ready endpoints
	// in the build: their calls fail, under their failure policy.
	Unreachable []extension.Registration
}

// Run is the extension hook stage, the one `portcullis serve`
// runs on every rebuild and `portcullis translate --show-extension-diff`
// once: it gives each extension registered through an ExtensionService
// the endpoints the build resolved for it (those of its cluster), and
// each whose TLS names Secrets those of the build's objects (secrets), then
// runs the chain's hooks (extension.Chain.Apply) on res's resources and
// the origins of its model. res is not modified.
func Run(ctx context.Context, chain *extension.Chain, res *pipeline.Result, secrets extension.SecretLookup) *Result {
	run := &Result{Before: res, Unreachable: setExtensionEndpoints(chain, res)}
	for _, r := range chain.Runners() {
		r.SetSecrets(secrets)
	}
	out, failures := chain.Apply(ctx, res.Resources, extension.RefsOf(res.Build.Model))
	if out != nil {
		run.After = &pipeline.Result{Build: res.Build, Resources: out}
	}
	run.Failures = failures
	run.Stages = chain.Stages()
	return run
}

// SecretsOf looks Secrets up in set.
func SecretsOf(set *objects.Set) extension.SecretLookup {
	return func(namespace, name string) *corev1.Secret {
		for _, s := range set.Secrets {
			if s.Namespace == namespace && s.Name == name {
				return s
			}
		}
		return nil
	}
}

// setExtensionEndpoints gives the extensions reached through an
// ExtensionService its endpoints in res (every valid ExtensionService has
// a cluster) and returns those left without any.
func setExtensionEndpoints(chain *extension.Chain, res *pipeline.Result) []extension.Registration {
	var unreachable []extension.Registration
	for _, r := range chain.Runners() {
		svc := r.Registration().Service
		if svc == "" {
			continue
		}
		ns, name, _ := strings.Cut(svc, "/")
		addrs := pipeline.ExtensionServiceEndpoints(res, ns, name)
		if len(addrs) == 0 {
			unreachable = append(unreachable, r.Registration())
		}
		r.SetEndpoints(addrs)
	}
	return unreachable
}
