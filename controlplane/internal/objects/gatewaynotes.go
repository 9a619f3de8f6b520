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
// Gateways are that controller's; a ListenerSet whose parent Gateway is not
// in the set, refused.
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
	gateways := make(map[string]bool, len(s.Gateways))
	for _, g := range s.Gateways {
		gateways[g.Namespace+"/"+g.Name] = true
		if name := string(g.Spec.GatewayClassName); !classes[name] {
			out = append(out, Skipped{Source: "Gateway " + g.Namespace + "/" + g.Name, Kind: KindGateway, Refused: true,
				Reason: fmt.Sprintf("its GatewayClass %q is not in the input (%s): nothing serves the Gateway or its routes, and they get no status", name, have)})
		}
	}
	return append(out, s.listenerSetNotes(gateways)...)
}

// listenerSetNotes are the ListenerSets whose parent is not a Gateway of
// the set (gateways, "namespace/name"), refused: no controller serves
// their listeners, and they get no status.
func (s *Set) listenerSetNotes(gateways map[string]bool) []Skipped {
	var out []Skipped
	for _, ls := range s.ListenerSets {
		p := ls.Spec.ParentRef
		group, kind := "gateway.networking.k8s.io", KindGateway
		if p.Group != nil && *p.Group != "" {
			group = string(*p.Group)
		}
		if p.Kind != nil && *p.Kind != "" {
			kind = string(*p.Kind)
		}
		ns := ls.Namespace
		if p.Namespace != nil && *p.Namespace != "" {
			ns = string(*p.Namespace)
		}
		var why string
		switch {
		case group != "gateway.networking.k8s.io" || kind != KindGateway:
			why = fmt.Sprintf("its spec.parentRef names a %s of group %s: a ListenerSet's parent is a Gateway", kind, group)
		case !gateways[ns+"/"+string(p.Name)]:
			why = fmt.Sprintf("its parent Gateway %s/%s is not in the input: nothing serves its listeners, and it gets no status", ns, p.Name)
		default:
			continue
		}
		out = append(out, Skipped{Source: "ListenerSet " + ls.Namespace + "/" + ls.Name, Kind: KindListenerSet, Refused: true, Reason: why})
	}
	return out
}
