package core

import (
	"reflect"
	"slices"
	"sort"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// GlobalInputs are what every root depends on.
type GlobalInputs struct {
	opts        Options
	delegations []*contourv1.TLSCertificateDelegation
	// extensions fingerprints what roots read of the ExtensionServices
	// (and what the global filters were resolved from).
	extensions string
}

// Equal reports whether every root's result can be reused: the global
// inputs of two builds are the same.
func (g *GlobalInputs) Equal(o *GlobalInputs) bool {
	return g.extensions == o.extensions && slices.EqualFunc(g.delegations, o.delegations, SameObject) && reflect.DeepEqual(g.opts, o.opts)
}

// GlobalInputsOf the snapshot, after the global stage.
func GlobalInputsOf(s *Snapshot) GlobalInputs {
	var ext []string
	for k, e := range s.extensions {
		cluster := ""
		if e.Cluster != nil {
			cluster = e.Cluster.Name
		}
		timeout := ""
		if e.Timeout != nil {
			timeout = e.Timeout.String()
		}
		ext = append(ext, strings.Join([]string{k.String(), cluster, e.Authority, timeout, status.Summary(e.status)}, "\x00"))
	}
	sort.Strings(ext)
	return GlobalInputs{opts: s.Opts, delegations: slices.Clone(s.In.Delegations), extensions: strings.Join(ext, "\x01")}
}
