package checkpoint

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

func TestLabels(t *testing.T) {
	for _, ok := range []string{"phase=build", "task.id=T-1", "a=", "x_y-z=with spaces and ünïcode"} {
		if _, _, err := ParseLabel(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "novalue", "=v", "Key=v", "-k=v", "k k=v", "k=\x00", "k=a\tb", strings.Repeat("k", 64) + "=v", "k=" + strings.Repeat("v", MaxLabelValueBytes+1), "k=\xff"} {
		if _, _, err := ParseLabel(bad); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
	many := map[string]string{}
	for i := range MaxLabels + 1 {
		many[string(rune('a'+i%26))+strings.Repeat("x", i/26+1)] = "v"
	}
	if err := ValidateLabels(many); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("%d labels accepted", len(many))
	}
	p := Params{ID: "0123456789abcdef01234567", Type: Manual, CreatedAt: time.Now(), Root: tree.Sum(nil), Labels: map[string]string{"a": "1", "b": "2"}}
	c, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	p.Labels["a"] = "changed" // the checkpoint keeps its own copy
	if c.Labels()["a"] != "1" || !c.HasLabels(map[string]string{"a": "1"}) || c.HasLabels(map[string]string{"a": "2"}) || c.HasLabels(map[string]string{"z": "1"}) {
		t.Fatalf("labels %v", c.Labels())
	}
	c.Labels()["b"] = "x"
	if c.Labels()["b"] != "2" {
		t.Fatal("Labels exposes the checkpoint's map")
	}
	if c.Pinned() {
		t.Fatal("new checkpoints are not pinned")
	}
	c.SetPinned(true)
	if !c.Pinned() {
		t.Fatal("SetPinned")
	}
	p.Labels = map[string]string{"Bad": "x"}
	if _, err := New(p); !errors.Is(err, fault.ErrInvalid) {
		t.Fatal("New accepted a bad label")
	}
	if (&Checkpoint{}).Labels() == nil {
		t.Fatal("nil labels")
	}
}
