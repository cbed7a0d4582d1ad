package servertest

import (
	"net"
	"strconv"
	"testing"
)

func portOf(t testing.TB, addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("servertest: address %q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("servertest: port of %q: %v", addr, err)
	}
	return n
}
