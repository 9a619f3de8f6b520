package httpproxy

import "strconv"

// places names the items of a list in status messages: "Spec.Routes[2]".
// The names of the first items are made once: every route, service and
// include of every build names its place, though only one with a finding
// uses it.
type places struct {
	list  string
	first [16]string
}

func newPlaces(list string) *places {
	p := &places{list: list}
	for i := range p.first {
		p.first[i] = p.make(i)
	}
	return p
}

// at is the name of item i.
func (p *places) at(i int) string {
	if i >= 0 && i < len(p.first) {
		return p.first[i]
	}
	return p.make(i)
}

func (p *places) make(i int) string { return p.list + "[" + strconv.Itoa(i) + "]" }

var (
	routePlaces   = newPlaces("Spec.Routes")
	includePlaces = newPlaces("Spec.Includes")
	servicePlaces = newPlaces("Services")
)
