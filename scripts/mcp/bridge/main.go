// Command bridge puts `plan mcp`, a stdio MCP server, behind the Streamable HTTP transport, for the
// MCP conformance suite, whose server scenarios reach a server by URL only. It is a test tool, not
// part of plan: every initialize without a session starts a fresh `plan mcp` process in the
// workspace, and each JSON-RPC message is passed through unchanged (one line on the process's
// stdin; its reply, matched by id, is the HTTP response, as application/json). The bridge offers no
// GET stream (405, as the transport allows): plan's server sends nothing unasked.
//
// Usage: bridge -plan BIN -dir WORKSPACE -url-file FILE; the URL it serves is written to FILE.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	planBin := flag.String("plan", "plan", "the plan binary")
	dir := flag.String("dir", ".", "the workspace plan mcp runs in")
	urlFile := flag.String("url-file", "", "write the URL served to this file")
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	if *urlFile != "" {
		if err := os.WriteFile(*urlFile, []byte(url+"\n"), 0o600); err != nil {
			return err
		}
	}
	b := &bridge{plan: *planBin, dir: *dir, sessions: map[string]*session{}}
	mux := http.NewServeMux()
	mux.Handle("/mcp", b)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	log.Printf("bridge: serving %s for %s mcp in %s", url, *planBin, *dir)
	err = srv.Serve(ln)
	b.closeAll()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

type bridge struct {
	plan, dir string
	mu        sync.Mutex
	sessions  map[string]*session
}

// session is one `plan mcp` process and the replies it owes, by request id.
type session struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	writeMu sync.Mutex
	mu      sync.Mutex
	waiting map[string]chan json.RawMessage
	done    chan struct{}
}

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
}

func (b *bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	switch r.Method {
	case http.MethodPost:
	case http.MethodDelete:
		b.mu.Lock()
		s := b.sessions[id]
		delete(b.sessions, id)
		b.mu.Unlock()
		if s == nil {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
		s.close()
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "the bridge offers no GET stream", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	batch := bytes.HasPrefix(bytes.TrimSpace(body), []byte("["))
	var raws []json.RawMessage
	if batch {
		err = json.Unmarshal(body, &raws)
	} else {
		raws = []json.RawMessage{body}
	}
	msgs := make([]message, len(raws))
	for i, raw := range raws {
		if err == nil {
			err = json.Unmarshal(raw, &msgs[i])
		}
	}
	if err != nil {
		http.Error(w, "not JSON-RPC: "+err.Error(), http.StatusBadRequest)
		return
	}
	var s *session
	if id == "" {
		if len(msgs) != 1 || msgs[0].Method != "initialize" {
			http.Error(w, "no Mcp-Session-Id and not an initialize request", http.StatusBadRequest)
			return
		}
		if s, err = b.start(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		id = rand.Text()
		b.mu.Lock()
		b.sessions[id] = s
		b.mu.Unlock()
	} else {
		b.mu.Lock()
		s = b.sessions[id]
		b.mu.Unlock()
		if s == nil {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
	}
	var replies []json.RawMessage
	for i, m := range msgs {
		reply, err := s.send(r.Context(), raws[i], m)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if reply != nil {
			replies = append(replies, reply)
		}
	}
	w.Header().Set("Mcp-Session-Id", id)
	if len(replies) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	out := replies[0]
	if batch {
		out, _ = json.Marshal(replies)
	}
	_, _ = w.Write(out)
}

// start runs `plan mcp` in the workspace and reads its replies.
func (b *bridge) start() (*session, error) {
	cmd := exec.Command(b.plan, "mcp")
	cmd.Dir = b.dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &session{cmd: cmd, stdin: stdin, waiting: map[string]chan json.RawMessage{}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for sc.Scan() {
			var m message
			line := append([]byte(nil), sc.Bytes()...)
			if json.Unmarshal(line, &m) != nil || m.Method != "" || len(m.ID) == 0 {
				log.Printf("bridge: dropped a message plan mcp sent unasked: %s", line)
				continue
			}
			s.mu.Lock()
			ch := s.waiting[key(m.ID)]
			delete(s.waiting, key(m.ID))
			s.mu.Unlock()
			if ch != nil {
				ch <- line
			}
		}
	}()
	return s, nil
}

// send writes one message to the process and, for a request, waits for its reply.
func (s *session) send(ctx context.Context, raw json.RawMessage, m message) (json.RawMessage, error) {
	var ch chan json.RawMessage
	if m.Method != "" && len(m.ID) > 0 {
		ch = make(chan json.RawMessage, 1)
		s.mu.Lock()
		s.waiting[key(m.ID)] = ch
		s.mu.Unlock()
	}
	var line bytes.Buffer
	if err := json.Compact(&line, raw); err != nil {
		return nil, err
	}
	line.WriteByte('\n')
	s.writeMu.Lock()
	_, err := s.stdin.Write(line.Bytes())
	s.writeMu.Unlock()
	if err != nil || ch == nil {
		return nil, err
	}
	select {
	case reply := <-ch:
		return reply, nil
	case <-s.done:
		return nil, errors.New("plan mcp ended without replying")
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("plan mcp did not reply to %s within 60s", m.Method)
	}
}

func (s *session) close() {
	_ = s.stdin.Close()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
	}
	_ = s.cmd.Wait()
}

func (b *bridge) closeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, s := range b.sessions {
		s.close()
		delete(b.sessions, id)
	}
}

// key is a request id as matched against replies: its compact JSON text.
func key(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}
