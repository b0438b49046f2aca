package maintenance_test

import (
	"errors"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

// budget.max_bytes is a positive size; anything else is refused, naming the key.
func TestStoreBudget(t *testing.T) {
	for content, want := range map[string]int64{
		"":                               0,
		"budget: {}\n":                   0,
		"budget:\n  max_bytes: 10GiB\n":  10 << 30,
		"budget:\n  max_bytes: 500MB\n":  500e6,
		"budget:\n  max_bytes: 123456\n": 123456,
	} {
		c := content
		got, err := settingsWith(t, &c).StoreBudget()
		if err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", content, got, err, want)
		}
	}
	for _, content := range []string{"budget:\n  max_bytes: lots\n", "budget:\n  max_bytes: 0\n", "budget:\n  max_bytes: -5MB\n"} {
		c := content
		if _, err := settingsWith(t, &c).StoreBudget(); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%q: %v, want invalid input", content, err)
		}
	}
	bad := "budget: [\n"
	if _, err := settingsWith(t, &bad).StoreBudget(); err == nil {
		t.Error("a config that does not parse: no error")
	}
}
