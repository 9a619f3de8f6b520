package pipeline

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/runtime/protoiface"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// renderOptions are the protojson options of every rendering of Envoy
// resources for people (MarshalResource): `translate -o json|yaml`, the
// admin /config and /extensions, `translate --show-extension-diff`. They
// are never used for what is sent to Envoy (the xDS server sends the
// messages' binary encoding, Any values as they are).
var renderOptions = protojson.MarshalOptions{Resolver: unknownTypes{}}

// unknownTypes resolves types as protoregistry.GlobalTypes does, except
// that a type URL it does not know (an extension server's filter whose
// package this binary does not link) resolves to unknownType rather than
// failing: protojson, which must decode an Any's value to render it,
// would otherwise fail the whole resource. Such an Any renders as
//
//	{"@type": "<its type URL>", "unknownTypeBytes": "<base64 of its value>"}
//
// which keeps everything it holds (a made-up type's value need not even
// be a protobuf encoding). Rendering only: such a document does not
// parse back (protojson.Unmarshal would look the type up again).
//
// Resolving to a well-known type instead (google.protobuf.BytesValue)
// would not do: protojson would decode the value as that type's encoding
// (field 1), losing or refusing the bytes; hence a type of our own whose
// decoding keeps them whole (unknownMessage).
type unknownTypes struct{}

func (unknownTypes) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
	if errors.Is(err, protoregistry.NotFound) {
		return unknownType{}, nil
	}
	return mt, err
}

func (unknownTypes) FindMessageByName(name protoreflect.FullName) (protoreflect.MessageType, error) {
	return protoregistry.GlobalTypes.FindMessageByName(name)
}

func (unknownTypes) FindExtensionByName(field protoreflect.FullName) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByName(field)
}

func (unknownTypes) FindExtensionByNumber(message protoreflect.FullName, field protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByNumber(message, field)
}

// unknownDesc describes the message an unknown Any's value is rendered
// as: its one field, unknown_type_bytes, holds the value's bytes as they
// are. It is not registered anywhere.
var unknownDesc, unknownBytesField = func() (protoreflect.MessageDescriptor, protoreflect.FieldDescriptor) {
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:    proto.String("portcullis/internal/pipeline/unknown_type.proto"),
		Package: proto.String("portcullis.internal.pipeline"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("UnknownType"),
			Field: []*descriptorpb.FieldDescriptorProto{{
				Name:     proto.String("unknown_type_bytes"),
				JsonName: proto.String("unknownTypeBytes"),
				Number:   proto.Int32(1),
				Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
				Type:     descriptorpb.FieldDescriptorProto_TYPE_BYTES.Enum(),
			}},
		}},
	}, nil)
	if err != nil {
		panic(fmt.Sprintf("pipeline: the unknown type's descriptor: %v", err))
	}
	md := fd.Messages().Get(0)
	return md, md.Fields().Get(0)
}()

// unknownType is the type an unknown type URL resolves to.
type unknownType struct{}

func (unknownType) New() protoreflect.Message {
	return unknownMessage{dynamicpb.NewMessage(unknownDesc)}
}

func (unknownType) Zero() protoreflect.Message {
	return unknownMessage{dynamicpb.NewMessage(unknownDesc)}
}

func (unknownType) Descriptor() protoreflect.MessageDescriptor { return unknownDesc }

// unknownMessage is a dynamic UnknownType whose decoding keeps the bytes
// whole in unknown_type_bytes instead of parsing them as fields: protojson
// decodes an Any's value with proto.Unmarshal, which uses a message's own
// Unmarshal method when it has one.
type unknownMessage struct{ *dynamicpb.Message }

func (m unknownMessage) ProtoReflect() protoreflect.Message   { return m }
func (m unknownMessage) Interface() protoreflect.ProtoMessage { return m }
func (unknownMessage) Type() protoreflect.MessageType         { return unknownType{} }

func (unknownMessage) ProtoMethods() *protoiface.Methods {
	return &protoiface.Methods{Unmarshal: func(in protoiface.UnmarshalInput) (protoiface.UnmarshalOutput, error) {
		m := in.Message.(unknownMessage)
		b := append(m.Get(unknownBytesField).Bytes(), in.Buf...) // merged, as decoding does
		m.Set(unknownBytesField, protoreflect.ValueOfBytes(b))
		return protoiface.UnmarshalOutput{Flags: protoiface.UnmarshalInitialized}, nil
	}}
}
