package correction_test

import (
	"testing"

	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
)

// A surgical correction is held to every rule a full one is (its kind and conflicts aside): one
// without its safety checkpoint could never be undone, one with a bad ID could name a path.
func TestNewSurgicalRefusesWhatNewRefuses(t *testing.T) {
	cases := map[string]func(*correction.Params){
		"no safety checkpoint": func(p *correction.Params) { p.SafetyCheckpointID = "" },
		"no archive":           func(p *correction.Params) { p.ArchiveDir = "" },
		"malformed ID":         func(p *correction.Params) { p.ID = "../../etc" },
		"empty reason":         func(p *correction.Params) { p.Reason = "  " },
		"scope of another":     func(p *correction.Params) { p.Scope = []correction.Item{item("b")} },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			p := validParams()
			p.Scope = p.Scope[:1]
			p.Conflicts = []correction.Conflict{{Path: "cfg", Why: "overlap", Written: "cfg"}}
			spoil(&p)
			c, err := correction.NewSurgical(p, at(5))
			faulttest.Require(t, err, fault.ErrInvalid, name)
			if c != nil {
				t.Fatalf("%s: a correction was returned with the error", name)
			}
		})
	}
}
