package builder

func ptrTo[T any](v T) *T { return &v }

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
