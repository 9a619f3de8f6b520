package builder

import (
	"reflect"
	"slices"
	"sort"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// globalInputs are what every root depends on.
type globalInputs struct {
	opts        Options
	delegations []*contourv1.TLSCertificateDelegation
	// extensions fingerprints what roots read of the ExtensionServices
	// (and what the global filters were resolved from).
	extensions string
}

func (g *globalInputs) equal(o *globalInputs) bool {
	return g.extensions == o.extensions && slices.EqualFunc(g.delegations, o.delegations, sameObject) && reflect.DeepEqual(g.opts, o.opts)
}

// globalInputsOf the snapshot, after the global stage.
func globalInputsOf(s *snapshot) globalInputs {
	var ext []string
	for k, e := range s.extensions {
		cluster := ""
		if e.cluster != nil {
			cluster = e.cluster.Name
		}
		timeout := ""
		if e.timeout != nil {
			timeout = e.timeout.String()
		}
		ext = append(ext, strings.Join([]string{k.String(), cluster, e.authority, timeout, status.Summary(e.status)}, "\x00"))
	}
	sort.Strings(ext)
	return globalInputs{opts: s.opts, delegations: slices.Clone(s.in.Delegations), extensions: strings.Join(ext, "\x01")}
}
