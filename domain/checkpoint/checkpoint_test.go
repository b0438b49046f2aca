package checkpoint

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/tree"
)

func validParams() Params {
	now := time.Date(2024, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 3600))
	return Params{
		ID: ident.New(now), Type: Manual, CreatedAt: now, Note: "n", DecisionID: "build",
		ParentID: "0123456789abcdef01234567", GitCommit: strings.Repeat("a", 40),
		Root:  tree.Sum([]byte("root")),
		Stats: Stats{Files: 2, Bytes: 10, StoredBytes: 5, Duration: time.Second},
	}
}

func TestNewValid(t *testing.T) {
	p := validParams()
	c, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(c.ID()) != p.ID || c.Type() != Manual || c.Note() != "n" || c.DecisionID() != "build" ||
		c.ParentID() != p.ParentID || c.GitCommit() != p.GitCommit || c.Root() != p.Root || c.Stats() != p.Stats {
		t.Errorf("accessors do not return the params: %+v", c)
	}
	if c.CreatedAt().Location() != time.UTC || !c.CreatedAt().Equal(p.CreatedAt) {
		t.Errorf("CreatedAt = %v, want %v in UTC", c.CreatedAt(), p.CreatedAt)
	}
	if c.RollbackCount() != 0 {
		t.Errorf("new checkpoint has rollback count %d", c.RollbackCount())
	}
	c.RecordRollback()
	c.RecordRollback()
	if c.RollbackCount() != 2 {
		t.Errorf("RollbackCount = %d after two rollbacks", c.RollbackCount())
	}
	r := Rehydrate(p, 7)
	if r.RollbackCount() != 7 || r.ID() != c.ID() || r.CreatedAt().Location() != time.UTC {
		t.Errorf("Rehydrate: %+v", r)
	}
	for _, typ := range Types {
		p.Type = typ
		if _, err := New(p); err != nil {
			t.Errorf("type %s: %v", typ, err)
		}
	}
	p.Note = strings.Repeat("x", MaxNoteLength)
	if _, err := New(p); err != nil {
		t.Errorf("note of exactly MaxNoteLength: %v", err)
	}
}

func TestNewRejects(t *testing.T) {
	cases := map[string]func(*Params){
		"short id":        func(p *Params) { p.ID = "abcd" },
		"non-hex id":      func(p *Params) { p.ID = strings.Repeat("z", ident.Length) },
		"empty id":        func(p *Params) { p.ID = "" },
		"unknown type":    func(p *Params) { p.Type = "nightly" },
		"empty type":      func(p *Params) { p.Type = "" },
		"long note":       func(p *Params) { p.Note = strings.Repeat("x", MaxNoteLength+1) },
		"no root":         func(p *Params) { p.Root = tree.ZeroHash },
		"no time":         func(p *Params) { p.CreatedAt = time.Time{} },
		"negative files":  func(p *Params) { p.Stats.Files = -1 },
		"negative bytes":  func(p *Params) { p.Stats.Bytes = -1 },
		"negative stored": func(p *Params) { p.Stats.StoredBytes = -1 },
	}
	for name, mutate := range cases {
		p := validParams()
		mutate(&p)
		c, err := New(p)
		if !errors.Is(err, fault.ErrInvalid) || c != nil {
			t.Errorf("%s: New = %v, %v; want nil, ErrInvalid", name, c, err)
		}
		if fault.Kind(err) != fault.ErrInvalid {
			t.Errorf("%s: kind %v", name, fault.Kind(err))
		}
	}
}

func TestParseType(t *testing.T) {
	for _, typ := range Types {
		got, err := ParseType(string(typ))
		if err != nil || got != typ {
			t.Errorf("ParseType(%q) = %q, %v", typ, got, err)
		}
	}
	_, err := ParseType("Manual")
	if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "pre_rollback") {
		t.Errorf("ParseType(Manual) = %v, want ErrInvalid listing the valid types", err)
	}
	// The contract's seven, plus pre_recover (recovery records work done after a crash), clone
	// (a cloned workspace's first checkpoint), post_run (the state a run ended in), and an agent
	// turn's turn_start and turn_end.
	if len(Types) != 12 || Types[7] != PreRecover || Types[8] != Clone || Types[9] != PostRun || Types[10] != TurnStart || Types[11] != TurnEnd {
		t.Errorf("want the contract's 7 checkpoint types, pre_recover, clone, post_run, turn_start and turn_end, got %v", Types)
	}
}
