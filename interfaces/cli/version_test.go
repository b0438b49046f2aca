package cli

import (
	"runtime/debug"
	"testing"
)

// `plan --version` says which build is running: the release a `go install …@vX` recorded, or the
// commit a build in a checkout recorded, marked +dirty when the tree had uncommitted changes, so a
// bug report names the exact code.
func TestBuildVersion(t *testing.T) {
	rev := "9be1c5aa8a25ad4793861a61002a4aade71713f5"
	cases := []struct {
		name     string
		version  string
		settings map[string]string
		want     string
	}{
		{"a release", "v1.2.3", nil, "v1.2.3"},
		{"a release built from a checkout", "v1.2.3", map[string]string{"vcs.revision": rev, "vcs.modified": "false"}, "v1.2.3 (revision " + rev + ")"},
		{"a checkout", "", map[string]string{"vcs.revision": rev, "vcs.modified": "false", "vcs": "git"}, "(devel) (revision " + rev + ")"},
		{"a checkout with changes", "(devel)", map[string]string{"vcs.modified": "true", "vcs.revision": rev}, "(devel) (revision " + rev + "+dirty)"},
		{"no version control", "", map[string]string{"-trimpath": "true"}, "(devel)"},
	}
	for _, c := range cases {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/planhq/plan", Version: c.version}}
		for k, v := range c.settings {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: k, Value: v})
		}
		if got := buildVersion(bi); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
