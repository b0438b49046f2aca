package persistence

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/planhq/plan/domain/fault"
)

// freezer is a TCP proxy to a server that can stop moving bytes (a frozen server or a
// partitioned network: the connection stays open, nothing arrives).
type freezer struct {
	addr   string
	mu     sync.Mutex
	cond   *sync.Cond
	frozen bool
}

// frozenDSN is the URL of a new test server reached through a freezer, with the query parameter
// param set to value.
func frozenDSN(t *testing.T, param, value string) (string, *freezer) {
	t.Helper()
	u, err := url.Parse(newPostgres(t))
	if err != nil {
		t.Fatal(err)
	}
	fz := newFreezer(t, u.Host)
	u.Host = fz.addr
	q := u.Query()
	q.Set(param, value)
	u.RawQuery = q.Encode()
	return u.String(), fz
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

// answerConn keeps a deadline pgx sets when it is the earlier, gives up on its own otherwise, and
// says which: only its own timeout is a noAnswer (which classifyPG names the server for).
func TestAnswerConnDeadlines(t *testing.T) {
	a, b := net.Pipe()
	defer func() { _ = b.Close() }()
	c := &answerConn{Conn: a, wait: 50 * time.Millisecond}
	start := time.Now()
	_, err := c.Read(make([]byte, 1))
	var na *noAnswer
	if !errors.As(err, &na) || !na.Timeout() || na.Temporary() || na.wait != 50*time.Millisecond || !strings.Contains(err.Error(), "timeout") ||
		!errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("a silent server: %v", err)
	}
	// pgx's own deadline (a cancelled query), earlier than ours: its timeout, not ours.
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); errors.As(err, &na) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("pgx's deadline: %v", err)
	}
	if err := c.SetWriteDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("x")); errors.As(err, &na) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("pgx's write deadline: %v", err)
	}
	// Cleared again (the zero time): ours applies, to writes as to reads.
	if err := c.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("x")); !errors.As(err, &na) {
		t.Fatalf("a server that takes nothing: %v", err)
	}
	go func() { _, _ = b.Write([]byte("y")) }()
	if n, err := c.Read(make([]byte, 1)); n != 1 || err != nil {
		t.Fatalf("an answer: %d, %v", n, err)
	}
	_ = a.Close()
	if err := c.SetReadDeadline(time.Time{}); err == nil {
		t.Fatal("a deadline set on a closed connection")
	}
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.As(err, &na) {
		t.Fatalf("a read on a closed connection: %v", err)
	}
	if _, err := c.Write([]byte("x")); err == nil || errors.As(err, &na) {
		t.Fatalf("a write on a closed connection: %v", err)
	}
}

// A connection that cannot be made within the connect timeout says so, naming the server.
func TestConnectTimeoutIsUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer func() { _ = c.Close() }() // held open, silent, until the listener closes
		}
	}()
	tg, err := parseTarget("postgres://u@" + l.Addr().String() + "/d?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	tg.connectTimeout = 200 * time.Millisecond
	_, cerr := pgconn.Connect(context.Background(), "postgres://u@"+l.Addr().String()+"/d?sslmode=disable&connect_timeout=1")
	if cerr == nil {
		t.Fatal("connected to a silent server")
	}
	err = classifyPG(tg, cerr)
	if !errors.Is(err, fault.ErrUnavailable) || !strings.Contains(err.Error(), "did not answer within 200ms (its connect timeout)") || !strings.Contains(err.Error(), l.Addr().String()) {
		t.Fatalf("classifyPG = %v", err)
	}
}
