package agents

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// geminiServer speaks the Gemini API (generateContent, streamGenerateContent with SSE) on
// loopback, for Gemini CLI. A streamed request is the agent's main loop: its reply is the script's
// next function call, chosen by the number of function calls already in the conversation, then a
// final text. A plain generateContent (the CLI's model router, asking for JSON) gets "{}".
type geminiServer struct {
	script []toolCall
	URL    string
}

func newGeminiServer(t *testing.T, script []toolCall) *geminiServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &geminiServer{script: script, URL: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(s.serve)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func geminiReply(parts ...any) map[string]any {
	return map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "gemini-2.5-pro",
	}
}

func (s *geminiServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1beta/models/") {
		http.Error(w, `{"error":{"code":404,"message":"not scripted"}}`, http.StatusNotFound)
		return
	}
	if strings.HasSuffix(r.URL.Path, ":generateContent") {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(geminiReply(map[string]any{"text": "{}"}))
		return
	}
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				FunctionCall any `json:"functionCall"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	step := 0
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if c.Role == "model" && p.FunctionCall != nil {
				step++
			}
		}
	}
	reply := geminiReply(map[string]any{"text": "Done."})
	if step < len(s.script) {
		call := s.script[step]
		reply = geminiReply(map[string]any{"functionCall": map[string]any{"id": call.id, "name": call.name, "args": call.input}})
	}
	b, _ := json.Marshal(reply)
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
}
