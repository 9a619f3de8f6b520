package core

// PtrTo points to a copy of v.
func PtrTo[T any](v T) *T { return &v }

// PtrValue is what p points to, or the zero value for nil.
func PtrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
