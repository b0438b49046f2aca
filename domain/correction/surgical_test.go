package correction_test

import (
	"testing"

	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
)

func TestNewSurgical(t *testing.T) {
	p := validParams()
	p.Scope = p.Scope[:1]
	p.Conflicts = []correction.Conflict{{Path: "cfg", Why: "overlap", Written: "cfg"}}
	c, err := correction.NewSurgical(p, at(5))
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind() != correction.Surgical || c.Status() != correction.Succeeded || !c.FinishedAt().Equal(at(5)) || !c.NeedsAttention() {
		t.Fatalf("surgical: %s %s %v %v", c.Kind(), c.Status(), c.FinishedAt(), c.NeedsAttention())
	}
	// Already finished: nothing re-executes it.
	faulttest.Require(t, c.StartReexecution(), fault.ErrConflict, "re-executing a finished surgical correction")

	p.Command = "make fix"
	c, err = correction.NewSurgical(p, at(5))
	if err != nil || c.Status() != correction.Reverted || !c.FinishedAt().IsZero() {
		t.Fatalf("with a replacement: %v %v", c.Status(), err)
	}
	if err := c.StartReexecution(); err != nil {
		t.Fatal(err)
	}

	p = validParams() // two attempts: not surgical
	_, err = correction.NewSurgical(p, at(5))
	faulttest.Require(t, err, fault.ErrInvalid, "a surgical correction of two attempts")
}

func TestNewRefusesSurgicalFields(t *testing.T) {
	p := validParams()
	p.Kind = correction.Surgical
	_, err := correction.New(p)
	faulttest.Require(t, err, fault.ErrInvalid, "New with kind surgical")
	p = validParams()
	p.Conflicts = []correction.Conflict{{Path: "x", Why: "y"}}
	_, err = correction.New(p)
	faulttest.Require(t, err, fault.ErrInvalid, "New with conflicts")
	c, err := correction.New(validParams())
	if err != nil || c.Kind() != correction.Full || c.NeedsAttention() {
		t.Fatalf("full: %v %v", c, err)
	}
	if r := correction.Rehydrate(correction.Params{ID: "x"}, correction.Reverted, nil, at(0)); r.Kind() != correction.Full {
		t.Fatalf("a correction stored before kinds existed is %s", r.Kind())
	}
}
