package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
)

// The history's text fits 100 columns whatever the commands were: each entry is its ID, kind,
// outcome and local start time, then the command cut to fit and its checkpoints by short name (a
// checkpoint deleted since by its full ID).
func TestHistoryTextFitsIn100Columns(t *testing.T) {
	at := time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)
	long := strings.Repeat("é", 300) // cut by characters, not bytes
	ops := []port.LoggedOperation{
		{ID: "01a213e5b161a1295b35874e", Kind: "exec", Args: []string{"exec", "--id", "big", "--", "sh", "-c", long},
			StartedAt: at, Outcome: "ok", Checkpoints: []checkpoint.ID{"01a213e5b124eba3a1ba44f6", "01a213e5b15281b333988612"}},
		{ID: "01a213e5b157e0d2a6b76b99", Kind: "rollback", Args: []string{"rollback", "--to-checkpoint", "@~1"},
			StartedAt: at, Outcome: "conflict", UndoneBy: "01a213e5b161a1295b35874f"},
		{ID: "01a213e4b5d43ab96bcd326d", Kind: "init", Args: []string{"init"}, StartedAt: at, Outcome: "ok"},
	}
	shorts := map[checkpoint.ID]string{"01a213e5b124eba3a1ba44f6": "ykkp"}
	var b bytes.Buffer
	writeHistory(&b, palette{}, ops, shorts)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 1+2*len(ops) {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	for _, l := range lines {
		if !utf8.ValidString(l) {
			t.Errorf("a line cut inside a character: %q", l)
		}
		if n := utf8.RuneCountInString(l); n > historyWidth {
			t.Errorf("a line of %d columns:\n%s", n, l)
		}
	}
	for _, want := range []string{
		"ID                        KIND      OUTCOME            STARTED\n",
		"01a213e5b161a1295b35874e  exec      ok                 " + localTime(at) + "\n",
		"  @ ykkp 01a213e5b15281b333988612",
		"…  @ ykkp",
		"01a213e5b157e0d2a6b76b99  rollback  conflict (undone)  " + localTime(at) + "\n",
		"    rollback --to-checkpoint '@~1'\n",
		"    init\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}
