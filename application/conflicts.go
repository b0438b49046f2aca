package application

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"

	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// OpenConflict is a path a surgical revert (`revert --conflicts markers`) left for the user to
// resolve, with the correction that left it.
type OpenConflict struct {
	CorrectionID string
	DecisionID   string
	Conflict     correction.Conflict
}

// Conflicts lists every unresolved conflict, newest correction first.
func (s *CorrectionService) Conflicts(ctx context.Context) ([]OpenConflict, error) {
	cs, err := s.corrections.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []OpenConflict
	for _, c := range cs {
		for _, x := range c.Unresolved() {
			out = append(out, OpenConflict{CorrectionID: c.ID(), DecisionID: c.Params().DecisionID, Conflict: x})
		}
	}
	return out, nil
}

// ResolveRequest marks conflicts resolved: Paths are workspace-relative. A path whose file still
// holds conflict markers is refused unless Force.
type ResolveRequest struct {
	Paths []string
	Force bool
}

// Resolve marks the unresolved conflicts at req.Paths resolved, all or none: a path without an
// unresolved conflict is not found, and a file that still holds conflict markers (a line starting
// with <<<<<<< or >>>>>>>) is refused, unless Force, before anything is marked.
func (s *CorrectionService) Resolve(ctx context.Context, req ResolveRequest) ([]OpenConflict, error) {
	if len(req.Paths) == 0 {
		return nil, fault.Invalid("name the paths to mark resolved (plan conflicts lists them)")
	}
	for _, p := range req.Paths {
		if err := tree.ValidatePath(p); err != nil {
			return nil, err
		}
	}
	ctx, release, err := s.guard.Enter(ctx, "resolve")
	if err != nil {
		return nil, err
	}
	defer release()
	open, err := s.Conflicts(ctx)
	if err != nil {
		return nil, err
	}
	var chosen []OpenConflict
	for _, p := range req.Paths {
		found := false
		for _, c := range open {
			if c.Conflict.Path != p {
				continue
			}
			found = true
			if !req.Force && c.Conflict.Written == c.Conflict.Path {
				if line, err := s.markerLine(p); err != nil {
					return nil, err
				} else if line > 0 {
					return nil, fault.Conflict("%s still holds conflict markers (line %d): edit it to the content you want, or pass --force to mark it resolved as it is; nothing was marked", p, line)
				}
			}
			chosen = append(chosen, c)
		}
		if !found {
			return nil, fault.NotFound("no unresolved conflict at %s (plan conflicts lists them)", p)
		}
	}
	now := s.clock.Now()
	err = s.tx.Do(ctx, func(ctx context.Context) error {
		for _, c := range chosen {
			if err := s.corrections.Update(ctx, c.CorrectionID, func(x *correction.Correction) error {
				return x.Resolve(c.Conflict.Path, now)
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range chosen {
		chosen[i].Conflict.ResolvedAt = now.UTC()
	}
	return chosen, nil
}

// markerLine returns the first line of the live file at path that is a conflict marker, 0 when
// none is (or the file is gone, or is no longer a regular file: the user resolved it so).
func (s *CorrectionService) markerLine(path string) (int, error) {
	f, err := s.snap.OpenLive(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) || errors.Is(err, fault.ErrInvalid):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("read %s for conflict markers: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	r := bufio.NewReader(f)
	start := true // the fragment begins a line (long lines come in several)
	for n := 1; ; {
		frag, more, err := r.ReadLine()
		if errors.Is(err, io.EOF) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("read %s for conflict markers: %w", path, err)
		}
		if start {
			if l := string(frag[:min(len(frag), 8)]); strings.HasPrefix(l, "<<<<<<< ") || strings.HasPrefix(l, ">>>>>>> ") || l == "<<<<<<<" || l == ">>>>>>>" {
				return n, nil
			}
		}
		start = !more
		if start {
			n++
		}
	}
}
