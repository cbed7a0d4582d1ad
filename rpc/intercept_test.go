package rpc

import (
	"context"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// The interceptor sees every call with its method, args and reply, may
// refuse it unrun, or run it, and what it returns is the call's answer.
func TestServer_Interceptor(t *testing.T) {
	var seen []string
	srv := NewServer(nil, WithInterceptor(func(ctx context.Context, method string, args, reply any, call func(context.Context) error) error {
		seen = append(seen, method)
		if a, ok := args.(*EchoArgs); ok && a.Name == "refused" {
			return structs.NewError(structs.CodePermissionDenied, "refused by the table")
		}
		if _, ok := reply.(*EchoReply); !ok {
			t.Errorf("reply is %T", reply)
		}
		return call(ctx)
	}))
	must.NoError(t, srv.Register("Test", &testService{}))

	var reply EchoReply
	must.NoError(t, srv.Call(t.Context(), "Test.Echo", &EchoArgs{Name: "a", N: 1}, &reply))
	must.EqOp(t, "a", reply.Name, must.Sprint("the method ran"))

	reply = EchoReply{}
	err := srv.Call(t.Context(), "Test.Echo", &EchoArgs{Name: "refused"}, &reply)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.EqOp(t, "", reply.Name, must.Sprint("a refused call does not run"))
	must.Eq(t, []string{"Test.Echo", "Test.Echo"}, seen)
}
