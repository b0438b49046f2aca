package testkit

import (
	"net"
	"testing"
)

// ClosedPort returns a loopback host:port nothing listens on (it was free a moment ago and was
// let go): a client that connects there is refused at once, so what it reports as a server that
// cannot be reached was decided without a server.
func ClosedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
