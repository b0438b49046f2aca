package bootstrap

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/planhq/plan/infrastructure/internal/fsx"
	"github.com/planhq/plan/infrastructure/internal/registry"
)

// The data directory's budget (data_max_bytes in the per-user configuration) counts every
// workspace's history it keeps, those whose directory is gone included. It only warns: a
// workspace's history is deleted by `plan workspaces retire` and nothing else. Adding up every
// workspace's files on every command would cost a hook more than its checkpoint, so the total is
// kept in <data>/usage.json and measured again when it is older than usageMaxAge or a workspace
// was added or retired since (the workspaces/ directory changed).

// usageMaxAge is how long a measured total is used before it is measured again.
const usageMaxAge = 10 * time.Minute

// usageFile is the measured total, in the data directory.
const usageFile = "usage.json"

// DataUsage is what the data directory's workspaces take, against the user's budget.
type DataUsage struct {
	// Path is the data directory; Config the per-user configuration file that set the budget.
	Path, Config string
	// MaxBytes is the budget (0: none); Bytes what every workspace's history takes, GoneBytes
	// what those of the Gone workspaces no longer in their directory (gone, replaced, detached or
	// damaged, as `plan workspaces` says) take.
	MaxBytes, Bytes, GoneBytes int64
	Workspaces, Gone           int
}

// usageRecord is usage.json.
type usageRecord struct {
	MeasuredAt time.Time `json:"measured_at"`
	// Changed is the workspaces/ directory's modification time when measured.
	Changed    time.Time `json:"workspaces_changed"`
	Bytes      int64     `json:"bytes"`
	GoneBytes  int64     `json:"gone_bytes"`
	Workspaces int       `json:"workspaces"`
	Gone       int       `json:"gone"`
}

// DataBudget is the data directory's usage against its budget, measured at most every
// usageMaxAge (see above); without a budget it is zero and costs nothing. A data directory not
// made yet takes nothing.
func DataBudget(getenv func(string) string, now time.Time) (DataUsage, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	u, err := registry.LoadUser(getenv)
	if err != nil || u.MaxBytes == 0 {
		return DataUsage{}, err
	}
	dir, err := registry.DirWith(getenv, u) // u read once: not again by Dir
	if err != nil {
		return DataUsage{}, err
	}
	out := DataUsage{Path: dir, Config: u.Path, MaxBytes: u.MaxBytes}
	fi, err := os.Stat(filepath.Join(dir, "workspaces"))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return DataUsage{}, err
	}
	rec, ok := readUsage(dir)
	if !ok || !rec.Changed.Equal(fi.ModTime()) || now.Sub(rec.MeasuredAt) > usageMaxAge || now.Before(rec.MeasuredAt) {
		if rec, err = measureUsage(dir, fi.ModTime(), now); err != nil {
			return DataUsage{}, err
		}
		if b, err := json.Marshal(rec); err == nil {
			_ = fsx.Replace(filepath.Join(dir, usageFile), b, true) // a cache: one not saved is measured next time
		}
	}
	out.Bytes, out.GoneBytes, out.Workspaces, out.Gone = rec.Bytes, rec.GoneBytes, rec.Workspaces, rec.Gone
	return out, nil
}

func readUsage(dir string) (usageRecord, bool) {
	b, err := os.ReadFile(filepath.Join(dir, usageFile)) // #nosec G304 -- plan's own cache in the private data directory
	var rec usageRecord
	if err != nil || json.Unmarshal(b, &rec) != nil {
		return usageRecord{}, false
	}
	return rec, true
}

func measureUsage(dir string, changed, now time.Time) (usageRecord, error) {
	reg, err := registry.Open(dir, false)
	if err != nil {
		return usageRecord{}, err
	}
	entries, bad, err := reg.List()
	if err != nil {
		return usageRecord{}, err
	}
	rec := usageRecord{MeasuredAt: now.UTC(), Changed: changed, Workspaces: len(entries) + len(bad)}
	for _, e := range entries {
		n := treeBytes(e.State)
		rec.Bytes += n
		if directoryOf(e) != DirPresent {
			rec.Gone++
			rec.GoneBytes += n
		}
	}
	for _, b := range bad {
		n := treeBytes(b.State)
		rec.Bytes += n
		rec.Gone++
		rec.GoneBytes += n
	}
	return rec, nil
}

// Percent is Bytes as a share of MaxBytes (0 without a budget).
func (u DataUsage) Percent() float64 {
	if u.MaxBytes <= 0 {
		return 0
	}
	return 100 * float64(u.Bytes) / float64(u.MaxBytes)
}

// Warning is what a command says about the data directory's budget: "" without one or below
// 80% of it.
func (u DataUsage) Warning(size func(int64) string) string {
	if u.MaxBytes <= 0 || u.Percent() < 80 {
		return ""
	}
	state := fmt.Sprintf("%.0f%% of its budget of %s", u.Percent(), size(u.MaxBytes))
	if u.Bytes > u.MaxBytes {
		state = "over its budget of " + size(u.MaxBytes)
	}
	msg := fmt.Sprintf("the data directory %s takes %s, %s (data_max_bytes in %s)", u.Path, size(u.Bytes), state, u.Config)
	if u.Gone > 0 {
		msg += fmt.Sprintf(": %d workspace(s) no longer in their directory keep %s of it; `plan workspaces` lists them, `plan workspaces retire ID` deletes one's history (plan never deletes it on its own)",
			u.Gone, size(u.GoneBytes))
	} else {
		msg += ": every workspace in it is still in its directory; `plan checkpoint prune` and `plan gc` in one free space, or raise data_max_bytes"
	}
	return msg
}
