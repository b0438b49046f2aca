package persistence

import (
	"io"
	"net"
	"sync"
	"testing"
)

// freezer is a TCP proxy to a server that can stop moving bytes (a frozen server or a
// partitioned network: the connection stays open, nothing arrives).
type freezer struct {
	addr   string
	mu     sync.Mutex
	cond   *sync.Cond
	frozen bool
}

func newFreezer(t *testing.T, upstream string) *freezer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{addr: l.Addr().String()}
	f.cond = sync.NewCond(&f.mu)
	var conns []net.Conn
	var cmu sync.Mutex
	t.Cleanup(func() {
		_ = l.Close()
		f.freeze(false)
		cmu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		cmu.Unlock()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				_ = c.Close()
				continue
			}
			cmu.Lock()
			conns = append(conns, c, up)
			cmu.Unlock()
			go f.pipe(up, c)
			go f.pipe(c, up)
		}
	}()
	return f
}

// pipe copies src to dst, holding each chunk while frozen.
func (f *freezer) pipe(dst, src net.Conn) {
	defer func() { _ = dst.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		f.mu.Lock()
		for f.frozen {
			f.cond.Wait()
		}
		f.mu.Unlock()
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				_ = src.Close()
			}
			return
		}
	}
}

func (f *freezer) freeze(on bool) {
	f.mu.Lock()
	f.frozen = on
	f.mu.Unlock()
	f.cond.Broadcast()
}
