package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/domain/fault"
)

// limitFlag is --limit on a command that lists: the first N items of the list as it is ordered.
func limitFlag() ucli.Flag {
	return &ucli.IntFlag{Name: "limit", Usage: "show the first `N` only (0: all)"}
}

// limited is items cut to the command's --limit.
func limited[T any](c *ucli.Context, items []T) ([]T, error) {
	n := c.Int("limit")
	if n < 0 {
		return nil, fault.Invalid("--limit %d: give a count of 0 (all) or more", n)
	}
	if n > 0 && n < len(items) {
		items = items[:n]
	}
	return items, nil
}
