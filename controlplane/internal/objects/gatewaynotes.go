package objects

import (
	"fmt"
	"strings"
)

// GatewayNotes are what the set's Gateway API objects ask for that no
// controller serves here, and that no status can say (a controller writes
// status only on what is its own): a Gateway whose GatewayClass is not in
// the set (missing, or its name misspelt), refused; a GatewayClass of
// another controller than controller (the one in force), noted: its
// Gateways are that controller's.
func (s *Set) GatewayNotes(controller string) []Skipped {
	classes := map[string]bool{}
	var names []string
	var out []Skipped
	for _, c := range s.GatewayClasses {
		classes[c.Name] = true
		names = append(names, c.Name)
		if string(c.Spec.ControllerName) != controller {
			out = append(out, Skipped{Source: "GatewayClass " + c.Name, Kind: KindGatewayClass,
				Reason: fmt.Sprintf("its controllerName %q is not this controller's (%q): its Gateways are not served here", c.Spec.ControllerName, controller)})
		}
	}
	have := "there is none"
	if len(names) > 0 {
		have = "there are " + strings.Join(names, ", ")
	}
	for _, g := range s.Gateways {
		if name := string(g.Spec.GatewayClassName); !classes[name] {
			out = append(out, Skipped{Source: "Gateway " + g.Namespace + "/" + g.Name, Kind: KindGateway, Refused: true,
				Reason: fmt.Sprintf("its GatewayClass %q is not in the input (%s): nothing serves the Gateway or its routes, and they get no status", name, have)})
		}
	}
	return out
}
