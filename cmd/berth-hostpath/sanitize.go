package main

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// sanitize renders a CSI message for a log line without what must never
// be logged: every field marked csi_secret in csi.proto (the secrets
// maps) and mount flags, at any depth. The message itself is not changed.
func sanitize(m proto.Message) string {
	if m == nil {
		return "{}"
	}
	c := proto.Clone(m)
	strip(c.ProtoReflect())
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(c)
	if err != nil {
		return "(unprintable)"
	}
	return string(b)
}

// strip clears the secret fields of m and of the messages inside it.
func strip(m protoreflect.Message) {
	var drop []protoreflect.FieldDescriptor
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case secretField(fd):
			drop = append(drop, fd)
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			for i := 0; i < v.List().Len(); i++ {
				strip(v.List().Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				strip(mv.Message())
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Kind() == protoreflect.MessageKind:
			strip(v.Message())
		}
		return true
	})
	for _, fd := range drop {
		m.Clear(fd)
	}
}

func secretField(fd protoreflect.FieldDescriptor) bool {
	if fd.Name() == "secrets" || fd.Name() == "mount_flags" {
		return true
	}
	secret, _ := proto.GetExtension(fd.Options(), csi.E_CsiSecret).(bool)
	return secret
}
