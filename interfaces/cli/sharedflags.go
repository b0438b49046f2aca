package cli

import (
	goflag "flag"

	ucli "github.com/urfave/cli/v2"
)

// urfave/cli's help and version flags are package variables that every command's flag set applies,
// and applying a flag writes into it: two Runners at once in one process (plan mcp's concurrent tool
// calls, a host's goroutines, parallel tests) raced on them. Each application works on a copy of
// the flag instead; the variables themselves are never written after this.
func init() {
	for _, f := range []*ucli.Flag{&ucli.HelpFlag, &ucli.VersionFlag} {
		if b, ok := (*f).(*ucli.BoolFlag); ok {
			*f = copyOnApply{b}
		}
	}
}

// copyOnApply is a shared boolean flag whose Apply leaves it as it is.
type copyOnApply struct{ *ucli.BoolFlag }

// Apply registers a copy of the flag in set.
func (f copyOnApply) Apply(set *goflag.FlagSet) error {
	c := *f.BoolFlag
	return c.Apply(set)
}
