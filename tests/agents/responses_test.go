package agents

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
)

// responsesServer speaks OpenAI's Responses API with SSE streaming on loopback, for Codex. The
// reply to a request is the script's next call, chosen by the number of function calls already in
// its input (a retried request gets the same answer), then a final message.
type responsesServer struct {
	script []toolCall
	URL    string
}

func newResponsesServer(t *testing.T, script []toolCall) *responsesServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &responsesServer{script: script, URL: "http://" + ln.Addr().String() + "/v1"}
	srv := &http.Server{Handler: http.HandlerFunc(s.serve)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *responsesServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		http.Error(w, `{"error":{"message":"not scripted"}}`, http.StatusNotFound)
		return
	}
	var req struct {
		Input []struct {
			Type string `json:"type"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	step := 0
	for _, item := range req.Input {
		if item.Type == "function_call" {
			step++
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(v map[string]any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
	}
	id := fmt.Sprintf("resp_%02d", step)
	send(map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	if step < len(s.script) {
		call := s.script[step]
		args, _ := json.Marshal(call.input)
		send(map[string]any{"type": "response.output_item.done", "item": map[string]any{
			"type": "function_call", "id": "fc_" + call.id, "call_id": call.id, "name": call.name, "arguments": string(args)}})
	} else {
		send(map[string]any{"type": "response.output_item.done", "item": map[string]any{
			"type": "message", "role": "assistant", "id": "msg_" + id,
			"content": []any{map[string]any{"type": "output_text", "text": "Done."}}}})
	}
	send(map[string]any{"type": "response.completed", "response": map[string]any{"id": id, "usage": map[string]any{
		"input_tokens": 10, "input_tokens_details": nil, "output_tokens": 5, "output_tokens_details": nil, "total_tokens": 15}}})
}
