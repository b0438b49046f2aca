package hostile

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// faultProxy is a TCP proxy on 127.0.0.1 in front of a real server (MinIO or PostgreSQL) that
// misbehaves on demand, as networks and servers do:
//   - pass: bytes move unchanged (the start state);
//   - cut: a connection is closed once n bytes of one server answer went back to the client (an
//     HTTP response on a kept-alive connection counts from its status line), so a download ends
//     mid-body;
//   - freeze: no byte moves in either direction, on open and new connections, until the mode
//     changes; connections stay open (a frozen server, a partition);
//   - refuse: open connections are closed and new ones are closed as soon as they are accepted;
//   - slow: every chunk waits d before it is forwarded.
//
// The mode can change at any time; it applies to open connections at their next chunk.
type faultProxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu       sync.Mutex // guards the fields below
	mode     proxyMode
	cutAfter int64
	delay    time.Duration
	changed  chan struct{} // closed and replaced at every mode change
	conns    map[net.Conn]struct{}
	accepted int

	wg sync.WaitGroup
}

type proxyMode int

const (
	modePass proxyMode = iota
	modeCut
	modeFreeze
	modeRefuse
	modeSlow
)

// newProxy starts a proxy to target (host:port); it is closed at the test's cleanup.
func newProxy(t testing.TB, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{t: t, ln: ln, target: target, changed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// addr is the proxy's host:port; url is it as an http:// endpoint.
func (p *faultProxy) addr() string { return p.ln.Addr().String() }
func (p *faultProxy) url() string  { return "http://" + p.addr() }

func (p *faultProxy) pass()                { p.set(modePass, 0, 0) }
func (p *faultProxy) cut(n int64)          { p.set(modeCut, n, 0) }
func (p *faultProxy) freeze()              { p.set(modeFreeze, 0, 0) }
func (p *faultProxy) slow(d time.Duration) { p.set(modeSlow, 0, d) }
func (p *faultProxy) refuse()              { p.set(modeRefuse, 0, 0); p.dropAll() }
func (p *faultProxy) connections() (n int) { p.mu.Lock(); n = p.accepted; p.mu.Unlock(); return n }

func (p *faultProxy) set(m proxyMode, n int64, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.cutAfter, p.delay = m, n, d
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *faultProxy) state() (proxyMode, int64, time.Duration, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.cutAfter, p.delay, p.changed
}

func (p *faultProxy) dropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *faultProxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *faultProxy) close() {
	_ = p.ln.Close()
	p.dropAll()
	p.set(modeRefuse, 0, 0) // wakes frozen pumps so they see their connections closed
	p.wg.Wait()
}

func (p *faultProxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.accepted++
		refused := p.mode == modeRefuse
		p.mu.Unlock()
		if refused {
			_ = client.Close()
			continue
		}
		server, err := net.DialTimeout("tcp", p.target, 10*time.Second)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.track(client, true)
		p.track(server, true)
		p.wg.Add(2)
		go p.pump(client, server, false)
		go p.pump(server, client, true)
	}
}

// pump copies src to dst chunk by chunk, applying the mode to each chunk; answers says src is the
// server, whose bytes a cut counts.
func (p *faultProxy) pump(src, dst net.Conn, answers bool) {
	defer p.wg.Done()
	defer func() {
		_ = src.Close()
		_ = dst.Close()
		p.track(src, false)
		p.track(dst, false)
	}()
	buf := make([]byte, 32<<10)
	var sent int64
	for {
		n, err := src.Read(buf)
		chunk := buf[:n]
		for n > 0 {
			mode, cutAfter, delay, changed := p.state()
			switch mode {
			case modeFreeze:
				<-changed
				continue
			case modeRefuse:
				return
			case modeSlow:
				time.Sleep(delay)
			case modeCut:
				if !answers {
					break
				}
				if bytes.HasPrefix(chunk, []byte("HTTP/")) {
					sent = 0
				}
				if sent+int64(len(chunk)) > cutAfter {
					_, _ = dst.Write(chunk[:max(0, cutAfter-sent)])
					return
				}
				sent += int64(len(chunk))
			case modePass:
			}
			if _, werr := dst.Write(chunk); werr != nil {
				return
			}
			break
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return
			}
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			return
		}
	}
}

// The proxy is itself tested against a local echo-like server, so a hostile test that fails points
// at plan, not at the proxy.
func TestFaultProxyModes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	payload := bytes.Repeat([]byte("x"), 100_000)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				b := make([]byte, 1)
				if _, err := c.Read(b); err != nil {
					return
				}
				_, _ = c.Write(append([]byte("HTTP/1.1 200 OK\r\n\r\n"), payload...))
			}()
		}
	}()
	p := newProxy(t, ln.Addr().String())
	fetch := func() ([]byte, error) {
		c, err := net.Dial("tcp", p.addr())
		if err != nil {
			return nil, err
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("?")); err != nil {
			return nil, err
		}
		return io.ReadAll(c)
	}
	whole := 19 + len(payload)
	if b, err := fetch(); err != nil || len(b) != whole {
		t.Fatalf("pass: %d bytes, %v; want %d", len(b), err, whole)
	}
	p.cut(1000)
	if b, _ := fetch(); len(b) != 1000 {
		t.Fatalf("cut 1000: got %d bytes", len(b))
	}
	p.freeze()
	if b, err := fetch(); len(b) != 0 || err == nil {
		t.Fatalf("freeze: got %d bytes, err %v; want a timeout with nothing read", len(b), err)
	}
	p.slow(time.Millisecond)
	if b, err := fetch(); err != nil || len(b) != whole {
		t.Fatalf("slow: %d bytes, %v", len(b), err)
	}
	p.refuse()
	if b, _ := fetch(); len(b) != 0 {
		t.Fatalf("refuse: got %d bytes", len(b))
	}
	p.pass()
	if b, err := fetch(); err != nil || len(b) != whole {
		t.Fatalf("pass again: %d bytes, %v", len(b), err)
	}
	if p.connections() != 6 {
		t.Fatalf("accepted %d connections, want 6", p.connections())
	}
}
