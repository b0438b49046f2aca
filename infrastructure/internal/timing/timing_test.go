package timing

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSpansAddUpInOrder(t *testing.T) {
	Enable(true)
	defer Enable(false)
	if !on.Load() {
		t.Fatal("not enabled")
	}
	end := Span("open")
	time.Sleep(2 * time.Millisecond)
	end()
	Span("commit")()
	end = Span("open")
	time.Sleep(time.Millisecond)
	end()
	p := Phases()
	if len(p) != 2 || p[0].Name != "open" || p[1].Name != "commit" || p[0].Took < 3*time.Millisecond {
		t.Fatalf("phases: %+v", p)
	}
	var b strings.Builder
	if err := Write(&b); err != nil {
		t.Fatal(err)
	}
	line, ok := strings.CutPrefix(strings.TrimSpace(b.String()), "plan: timings: ")
	var got map[string]float64
	if !ok || json.Unmarshal([]byte(line), &got) != nil || got["open"] < 3 || len(got) != 2 {
		t.Fatalf("written: %q", b.String())
	}
	if err := Write(failing{}); err == nil {
		t.Fatal("a failed write succeeded")
	}
}

func TestDisabledMeasuresNothing(t *testing.T) {
	Enable(false)
	Span("open")()
	if len(Phases()) != 0 {
		t.Fatal("measured while disabled")
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("closed") }
