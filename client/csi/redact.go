package csi

import (
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// strippedValue replaces every secret in a logged request.
const strippedValue = "***stripped***"

// mountFlagsField is the one field that is not marked csi_secret but may
// hold credentials (a CIFS password=, for one): it is stripped too.
const mountFlagsField protoreflect.FullName = "csi.v1.VolumeCapability.MountVolume.mount_flags"

// redact renders a request for a log line with every field the CSI spec
// marks csi_secret, and every mount flag, stripped at any depth. It never
// returns a secret, and renders what it cannot inspect by its type alone.
func redact(req any) string {
	m, ok := req.(proto.Message)
	if !ok {
		return fmt.Sprintf("%T", req)
	}
	c := proto.Clone(m)
	stripSecrets(c.ProtoReflect())
	b, err := protojson.Marshal(c)
	if err != nil {
		return fmt.Sprintf("%T", req)
	}
	return string(b)
}

func stripSecrets(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case isSecret(fd):
			stripField(m, fd, v)
		case fd.FullName() == mountFlagsField:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				l.Set(i, protoreflect.ValueOfString(strippedValue))
			}
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					stripSecrets(mv.Message())
					return true
				})
			}
		case fd.IsList():
			if fd.Message() != nil {
				l := v.List()
				for i := 0; i < l.Len(); i++ {
					stripSecrets(l.Get(i).Message())
				}
			}
		case fd.Message() != nil:
			stripSecrets(v.Message())
		}
		return true
	})
}

// stripField keeps the shape of a secret field (its map keys, which name
// the secrets) and replaces every value.
func stripField(m protoreflect.Message, fd protoreflect.FieldDescriptor, v protoreflect.Value) {
	switch {
	case fd.IsMap() && fd.MapValue().Kind() == protoreflect.StringKind:
		mp := v.Map()
		mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
			mp.Set(k, protoreflect.ValueOfString(strippedValue))
			return true
		})
	case !fd.IsList() && !fd.IsMap() && fd.Kind() == protoreflect.StringKind:
		m.Set(fd, protoreflect.ValueOfString(strippedValue))
	default:
		m.Clear(fd)
	}
}

func isSecret(fd protoreflect.FieldDescriptor) bool {
	opts := fd.Options()
	if opts == nil {
		return false
	}
	secret, _ := proto.GetExtension(opts, csipb.E_CsiSecret).(bool)
	return secret
}
