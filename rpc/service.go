package rpc

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/berth-csi/berth/structs"
)

var (
	typeOfError   = reflect.TypeFor[error]()
	typeOfContext = reflect.TypeFor[context.Context]()
)

// service is one registered receiver and the methods it serves.
type service struct {
	name    string
	rcvr    reflect.Value
	methods map[string]*methodType
}

// methodType is one servable method:
//
//	func (t *T) Method(args *A, reply *R) error
//	func (t *T) Method(ctx context.Context, args *A, reply *R) error
//
// args may be a pointer or a value; reply must be a pointer.
type methodType struct {
	method    reflect.Method
	withCtx   bool
	argType   reflect.Type
	replyType reflect.Type
}

// newService reflects over rcvr's exported methods and keeps those of a
// servable shape. It fails when none are.
func newService(name string, rcvr any) (*service, error) {
	if name == "" || strings.Contains(name, ".") {
		return nil, fmt.Errorf("%w: name %q must be non-empty and contain no dot", ErrBadService, name)
	}
	if rcvr == nil {
		return nil, fmt.Errorf("%w: %s: nil receiver", ErrBadService, name)
	}
	s := &service{name: name, rcvr: reflect.ValueOf(rcvr), methods: map[string]*methodType{}}
	typ := s.rcvr.Type()
	for i := 0; i < typ.NumMethod(); i++ {
		if mt, ok := suitableMethod(typ.Method(i)); ok {
			s.methods[mt.method.Name] = mt
		}
	}
	if len(s.methods) == 0 {
		return nil, fmt.Errorf("%w: %s: %s has no method of the form func(args *A, reply *R) error",
			ErrBadService, name, typ)
	}
	return s, nil
}

// suitableMethod reports whether m can be served and how to call it.
func suitableMethod(m reflect.Method) (*methodType, bool) {
	t := m.Type // includes the receiver as In(0)
	if !m.IsExported() || t.NumOut() != 1 || t.Out(0) != typeOfError {
		return nil, false
	}
	mt := &methodType{method: m}
	in := 1
	switch t.NumIn() {
	case 3:
	case 4:
		if t.In(1) != typeOfContext {
			return nil, false
		}
		mt.withCtx = true
		in = 2
	default:
		return nil, false
	}
	mt.argType, mt.replyType = t.In(in), t.In(in+1)
	if mt.replyType.Kind() != reflect.Pointer {
		return nil, false
	}
	return mt, true
}

// newArgs returns a fresh args value and the pointer to decode into.
func (mt *methodType) newArgs() (arg reflect.Value, target any) {
	if mt.argType.Kind() == reflect.Pointer {
		p := reflect.New(mt.argType.Elem())
		return p, p.Interface()
	}
	p := reflect.New(mt.argType)
	return p.Elem(), p.Interface()
}

// newReply returns a fresh reply pointer.
func (mt *methodType) newReply() reflect.Value {
	return reflect.New(mt.replyType.Elem())
}

// inProcessArgs adapts a caller's args value for an in-process call: the
// declared type, its pointer or its element, or nil for the zero value.
func (mt *methodType) inProcessArgs(args any) (reflect.Value, bool) {
	if args == nil {
		arg, _ := mt.newArgs()
		return arg, true
	}
	v := reflect.ValueOf(args)
	switch {
	case v.Type() == mt.argType:
		return v, true
	case mt.argType.Kind() == reflect.Pointer && v.Type() == mt.argType.Elem():
		p := reflect.New(v.Type())
		p.Elem().Set(v)
		return p, true
	case v.Kind() == reflect.Pointer && v.Type().Elem() == mt.argType:
		if v.IsNil() {
			return reflect.Zero(mt.argType), true
		}
		return v.Elem(), true
	}
	return reflect.Value{}, false
}

// splitMethod splits "Service.Method".
func splitMethod(serviceMethod string) (svc, method string, err error) {
	dot := strings.LastIndex(serviceMethod, ".")
	if dot <= 0 || dot == len(serviceMethod)-1 {
		return "", "", structs.NewError(structs.CodeBadRequest,
			"rpc: unknown method %q: want Service.Method", serviceMethod)
	}
	return serviceMethod[:dot], serviceMethod[dot+1:], nil
}
