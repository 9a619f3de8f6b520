package translator

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ShallowClone returns a new message whose fields are m's: the fields'
// values (messages, lists) are shared, so set a field to change it, never
// change one in place. Translated messages are shared between
// translations (Cache) and with the xDS server: this is how to change one.
func ShallowClone[M proto.Message](m M) M {
	src := m.ProtoReflect()
	dst := src.New()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		dst.Set(fd, v)
		return true
	})
	return dst.Interface().(M)
}
