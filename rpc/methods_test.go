package rpc

import (
	"slices"
	"testing"

	"github.com/shoenig/test/must"
)

type otherService struct{}

func (otherService) Get(_ *EchoArgs, _ *EchoReply) error { return nil }

func TestServer_Methods(t *testing.T) {
	srv := NewServer(nil)
	must.SliceEmpty(t, srv.Methods())
	must.NoError(t, srv.Register("Test", &testService{}))
	must.NoError(t, srv.Register("Other", otherService{}))
	got := srv.Methods()
	for _, m := range []string{"Other.Get", "Test.Echo", "Test.Value", "Test.Slow"} {
		must.SliceContains(t, got, m)
	}
	must.SliceNotContains(t, got, "Test.NotServed", must.Sprint("a method of no servable shape is not listed"))
	must.True(t, slices.IsSorted(got))
}
