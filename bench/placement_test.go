package main

import (
	"bytes"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func ms(xs ...int) []time.Duration {
	out := make([]time.Duration, len(xs))
	for i, x := range xs {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

// A placement row is the ratio of the medians, ours over (a)'s, and passes up to 1.10x.
func TestPlacementResult(t *testing.T) {
	r := placementResult("x", "x", ms(105, 300, 104), ms(100, 101, 99))
	if r.Status != statusPass || r.Ours != 105 || r.Baseline != 100 || r.OfBaseline != 1.05 {
		t.Errorf("1.05x: %+v", r)
	}
	if got := ratioText(r); got != "1.05x of (a)" {
		t.Errorf("ratio text %q", got)
	}
	if r := placementResult("x", "x", ms(111), ms(100)); r.Status != statusFail {
		t.Errorf("1.11x passed: %+v", r)
	}
	if r := placementResult("x", "x", ms(110), ms(100)); r.Status != statusPass {
		t.Errorf("1.10x failed: %+v", r)
	}
	if r := placementResult("x", "x", ms(50), ms(100)); r.Status != statusPass || ratioText(r) != "0.50x of (a)" {
		t.Errorf("faster: %+v %q", r, ratioText(r))
	}
	if r := placementResult("x", "x", nil, ms(100)); r.Status != statusNA || ratioText(r) != "-" {
		t.Errorf("nothing measured: %+v", r)
	}
	if r := placementResult("x", "x", ms(10), nil); r.Status != statusFail || r.OfBaseline != 0 {
		t.Errorf("no baseline: %+v", r)
	}
}

func placedWith(key string, v int, unwatched string) *placed {
	p := &placed{key: key, samples: map[string][]time.Duration{}, unwatched: unwatched}
	for _, row := range placementRows {
		p.samples[row.key] = ms(v, v, v)
	}
	return p
}

// Each of (b) and (c) gets every row against (a); without (c) its rows are n/a with the reason,
// so -strict does not fail on a machine without a tmpfs.
func TestPlacementResults(t *testing.T) {
	a, b, c := placedWith(placeWorkspace, 100, ""), placedWith(placeSameFS, 105, "plan watch did not run"), placedWith(placeTmpfs, 120, "")
	rows := placementResults([]*placed{a, b, c}, "", "1% change")
	if len(rows) != 2*len(placementRows) {
		t.Fatalf("%d rows", len(rows))
	}
	ids := map[string]result{}
	for _, r := range rows {
		ids[r.ID] = r
	}
	if r := ids["placement_samefs_change"]; r.Status != statusPass || r.Name != "placement, data dir, same fs: checkpoint, 1% change" {
		t.Errorf("same fs: %+v", r)
	}
	if r := ids["placement_tmpfs_nochange"]; r.Status != statusFail || r.OfBaseline != 1.2 || r.Target != "<= 1.10x (a)" {
		t.Errorf("tmpfs: %+v", r)
	}
	if r := ids["placement_samefs_hook_p50"]; !strings.Contains(r.Note, "samefs: plan watch did not run") {
		t.Errorf("a hook row does not say the service did not run: %+v", r)
	}
	if r := ids["placement_samefs_hook_walk_p95"]; r.Note != "" {
		t.Errorf("a walking row notes the service: %+v", r)
	}

	rows = placementResults([]*placed{a, b}, "/dev/shm is not a tmpfs (ext4)", "1% change")
	rep := &report{}
	for _, r := range rows {
		rep.add(r)
	}
	if rep.NotAvailable != len(placementRows) || rep.Failed != 0 || rep.Passed != len(placementRows) {
		t.Fatalf("without (c): %d n/a, %d failed, %d passed", rep.NotAvailable, rep.Failed, rep.Passed)
	}
	if r := rep.Results[len(rep.Results)-1]; !strings.Contains(r.Note, "(c) not measured: /dev/shm is not a tmpfs") {
		t.Errorf("the n/a row does not say why: %+v", r)
	}
	rep.Placement = &placementInfo{Files: 10, Bytes: 2048, ChangedFiles: 1, Skipped: "/dev/shm is not a tmpfs (ext4)",
		Where: []placementWhere{{Key: placeWorkspace, History: "/b/ws/.plan", FileSystem: "ext4"}, {Key: placeSameFS, History: "/b/data/workspaces/01a", FileSystem: "ext4"}}}
	var buf bytes.Buffer
	if err := rep.writeText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"placement: 10 files, 2.0 KiB, a change rewrites 1 files; histories: workspace /b/ws/.plan (ext4), samefs /b/data/workspaces/01a (ext4); (c) tmpfs skipped: /dev/shm is not a tmpfs",
		"1.05x of (a)", "<= 1.10x (a)", "n/a"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, buf.String())
		}
	}
	if err := rep.writeJSON(io.Discard); err != nil {
		t.Fatal(err)
	}
	// Without (a) nothing is compared.
	for _, r := range placementResults([]*placed{b}, "", "1% change") {
		if r.Status != statusNA {
			t.Errorf("no baseline: %+v", r)
		}
	}
}

// Each round starts with another placement.
func TestRotated(t *testing.T) {
	if got := rotated([]int{0, 1, 2}, 4); !slices.Equal(got, []int{1, 2, 0}) {
		t.Errorf("rotated = %v", got)
	}
	if rotated([]int{}, 3) != nil || !slices.Equal(rotated([]int{7}, 5), []int{7}) {
		t.Error("empty or single")
	}
	if !slices.Equal(indexes(3), []int{0, 1, 2}) {
		t.Error("indexes")
	}
}

func TestPlacementFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-placement-only", "-files=2000"}, io.Discard)
	if err != nil || !cfg.placementOnly || !cfg.placement || cfg.files != 2000 {
		t.Errorf("%+v %v", cfg, err)
	}
	if cfg, err := parseFlags([]string{"-placement=false"}, io.Discard); err != nil || cfg.placement {
		t.Errorf("-placement=false: %+v %v", cfg, err)
	}
}

// The tmpfs placement never fails the run: it is skipped with a reason, or made private.
func TestTmpfsDataDir(t *testing.T) {
	dir, reason := tmpfsDataDir(t.TempDir(), 1<<20)
	if dir == "" {
		if reason == "" {
			t.Fatal("skipped without a reason")
		}
		t.Skipf("no tmpfs here: %s", reason)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if !sameDevice(dir, dir) || fsType(dir) != "tmpfs" {
		t.Errorf("%s: %s", dir, fsType(dir))
	}
	if _, reason := tmpfsDataDir(dir, 1<<20); !strings.Contains(reason, "file system itself") {
		t.Errorf("a bench directory on the tmpfs itself: %q", reason)
	}
	if _, reason := tmpfsDataDir(t.TempDir(), 1<<62); !strings.Contains(reason, "free") {
		t.Errorf("too little space: %q", reason)
	}
}
