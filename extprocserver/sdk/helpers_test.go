package sdk_test

import (
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

type structpbStruct = structpb.Struct

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
