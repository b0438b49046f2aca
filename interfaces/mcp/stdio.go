package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
)

// answered keeps the end of stdin from the MCP SDK until every request read before it has had
// its response written. The SDK closes the session as soon as its reader sees EOF, dropping the
// answers of the requests still being handled, so a client that pipes three requests and closes
// its end (`printf … | plan mcp`) got none or one. Here stdin is read by a goroutine of ours, which
// passes each JSON-RPC message on to the SDK through a pipe and counts the requests among them
// (those with an id and a method); the responses the SDK writes count them out; EOF goes on to the
// SDK once the count is zero, or when ctx ends. A request the client cancels
// (notifications/cancelled) is owed no answer.
type answered struct {
	mu      sync.Mutex // guards owed and the cond's wake-ups
	settled *sync.Cond
	owed    map[string]bool // the ids of the requests read and not yet answered
}

// message is what answered reads of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// holdEOF returns the reader the SDK reads in, and the writer it writes to, for stdin in and
// stdout out; release lets go of what is still owed, for when the session has ended anyway (the
// SDK gave up on malformed input).
func holdEOF(ctx context.Context, in io.Reader, out io.Writer) (_ io.Reader, _ io.Writer, release func()) {
	a := &answered{owed: map[string]bool{}}
	a.settled = sync.NewCond(&a.mu)
	pr, pw := io.Pipe()
	stop := context.AfterFunc(ctx, a.release)
	go func() {
		defer stop()
		err := a.forward(in, pw)
		a.wait()
		_ = pw.CloseWithError(err)
	}()
	return pr, &responses{a: a, w: out}, func() {
		a.release()
		_ = pr.Close() // a forward still writing stops
	}
}

// release forgets every answer still owed.
func (a *answered) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.owed)
	a.settled.Broadcast()
}

// forward copies stdin to the SDK message by message, counting the requests in; once a message
// does not parse, the rest is passed on as it is (the SDK answers it with its parse error).
func (a *answered) forward(in io.Reader, pw *io.PipeWriter) error {
	dec := json.NewDecoder(in)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			_, err = io.Copy(pw, io.MultiReader(dec.Buffered(), in))
			return err
		}
		a.read(raw)
		if _, err := pw.Write(append(raw, '\n')); err != nil {
			return err
		}
	}
}

// read counts in the requests of one message (a batch is an array of them).
func (a *answered) read(raw json.RawMessage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range messages(raw) {
		switch {
		case m.Method == "notifications/cancelled" && len(m.Params.RequestID) > 0:
			delete(a.owed, idKey(m.Params.RequestID))
			a.settled.Broadcast()
		case m.Method != "" && len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null")):
			a.owed[idKey(m.ID)] = true
		}
	}
}

// wait blocks until no request read is owed an answer.
func (a *answered) wait() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(a.owed) > 0 {
		a.settled.Wait()
	}
}

// responses counts out the requests whose responses the SDK writes (each Write is one message, or
// one batch).
type responses struct {
	a *answered
	w io.Writer
}

func (r *responses) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	for _, m := range messages(bytes.TrimSpace(p)) {
		if m.Method == "" && len(m.ID) > 0 {
			delete(r.a.owed, idKey(m.ID))
		}
	}
	r.a.settled.Broadcast()
	return n, err
}

// messages reads one message or a batch of them; what does not parse is no message.
func messages(raw []byte) []message {
	var batch []message
	if len(raw) > 0 && raw[0] == '[' {
		if json.Unmarshal(raw, &batch) != nil {
			return nil
		}
		return batch
	}
	var m message
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return []message{m}
}

// idKey is a request ID as a map key: its JSON, compacted (1 and "1" stay apart, as JSON-RPC has
// them).
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}
