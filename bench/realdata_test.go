package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/infrastructure/bootstrap"
)

func TestEditLine(t *testing.T) {
	src := []byte("package x\n\nfunc a() {}\n\nfunc b() {}\n")
	got := editLine(src, 7, 3)
	line := "// plan-bench edit 7 of file 3\n"
	at := bytes.Index(got, []byte(line))
	if at < 0 || len(got) != len(src)+len(line) {
		t.Fatalf("no inserted line:\n%s", got)
	}
	if at < len(src)/2 || got[at-1] != '\n' {
		t.Errorf("inserted at %d, want a line start at or after the middle (%d)", at, len(src)/2)
	}
	if rest := slices.Concat(got[:at], got[at+len(line):]); !bytes.Equal(rest, src) {
		t.Errorf("the edit changed more than one line:\n%s", got)
	}
	if !bytes.Equal(editLine(src, 7, 3), got) || bytes.Equal(editLine(src, 8, 3), got) {
		t.Error("the edit is not a function of (content, gen)")
	}
	if got := editLine([]byte("no newline"), 1, 1); !bytes.HasPrefix(got, []byte("no newline//")) {
		t.Errorf("without a line boundary the line goes at the end: %q", got)
	}
	if got := editLine(nil, 1, 1); string(got) != "// plan-bench edit 1 of file 1\n" {
		t.Errorf("empty file: %q", got)
	}
}

// writeTree creates files (path → content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRealTreeScanPickAndReplay(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{".plan/objects/x": "state", "src/b.go": "b\nb\n", "src/a.go": "a\na\n", "README": "r\n"}
	for i := range 30 {
		files[filepath.ToSlash(filepath.Join("pkg", string(rune('a'+i%26)), "f"+string(rune('0'+i/26))+".go"))] = strings.Repeat("x\n", i+1)
	}
	writeTree(t, root, files)
	if err := os.Symlink("src/a.go", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "src", "a.go"), 0o750); err != nil {
		t.Fatal(err)
	}
	tr, err := scanRealTree(root, 1)
	if err != nil {
		t.Fatal(err)
	}
	if tr.count() != 33 || tr.links != 1 || tr.entries() != 34 {
		t.Fatalf("count %d, links %d, entries %d: want 33 files (not .plan's), 1 symlink", tr.count(), tr.links, tr.entries())
	}
	if !slices.IsSorted(tr.rels) || slices.Contains(tr.rels, ".plan/objects/x") {
		t.Fatalf("rels %v", tr.rels)
	}

	idx := tr.pickChanges(5, 9)
	if !slices.Equal(idx, tr.pickChanges(5, 9)) || slices.Equal(idx, tr.pickChanges(5, 10)) {
		t.Error("picks are not reproducible per round")
	}
	if len(slices.Compact(slices.Sorted(slices.Values(idx)))) != 5 {
		t.Errorf("picks repeat a file: %v", idx)
	}

	// What the rollback phase relies on: the same generation on the same content writes the same
	// bytes, and a rewrite changes every picked file.
	all := make([]int, tr.count())
	for i := range all {
		all[i] = i
	}
	orig, err := hashFiles(tr, all)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.rewrite(context.Background(), all, 4); err != nil {
		t.Fatal(err)
	}
	if bad, _ := differing(tr, all, orig); bad != len(all) {
		t.Fatalf("the rewrite changed %d of %d files", bad, len(all))
	}
	changed, _ := hashFiles(tr, all)
	info, err := os.Stat(filepath.Join(root, "src", "a.go"))
	if err != nil || info.Mode().Perm() != 0o750 {
		t.Errorf("rewrite changed a file's mode: %v %v", info.Mode(), err)
	}
	writeTree(t, root, files)
	if bad, _ := differing(tr, all, orig); bad != 0 {
		t.Fatal("restoring the originals failed")
	}
	if err := tr.rewrite(context.Background(), all, 4); err != nil {
		t.Fatal(err)
	}
	if bad, _ := differing(tr, all, changed); bad != 0 {
		t.Errorf("replaying generation 4 differs in %d files", bad)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tr.rewrite(ctx, all, 5); err == nil {
		t.Error("a cancelled rewrite reported success")
	}
	if _, err := scanRealTree(t.TempDir(), 1); err == nil {
		t.Error("an empty tree was accepted")
	}
}

// moduleZip writes a zip holding names (→ content) and returns its path.
func moduleZip(t *testing.T, names map[string]string, symlink string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.zip")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for k := range names {
			if !yield(k) {
				return
			}
		}
	}) {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(names[n])); err != nil {
			t.Fatal(err)
		}
	}
	if symlink != "" {
		h := &zip.FileHeader{Name: symlink}
		h.SetMode(os.ModeSymlink | 0o777)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("/etc/passwd")); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExtractModuleZip(t *testing.T) {
	const prefix = "example.com/m@v1.0.0/"
	good := map[string]string{prefix + "go.mod": "module example.com/m\n", prefix + "a/b/c.go": "package b\n"}
	dst := t.TempDir()
	files, size, err := extractModuleZip(moduleZip(t, good, ""), prefix, dst)
	if err != nil || files != 2 || size != int64(len("module example.com/m\n")+len("package b\n")) {
		t.Fatalf("files %d size %d: %v", files, size, err)
	}
	if data, err := os.ReadFile(filepath.Join(dst, "a", "b", "c.go")); err != nil || string(data) != "package b\n" {
		t.Fatalf("extracted %q, %v", data, err)
	}

	for name, entries := range map[string]map[string]string{
		"escapes dst":     {prefix + "../evil": "x"},
		"absolute":        {"/etc/evil": "x"},
		"another prefix":  {"example.com/other@v1.0.0/x": "x"},
		"into .plan":      {prefix + ".plan/plan.db": "x"},
		"into .git":       {prefix + ".git/config": "x"},
		"a dot-dot later": {prefix + "a/../../evil": "x"},
	} {
		out := t.TempDir()
		if _, _, err := extractModuleZip(moduleZip(t, entries, ""), prefix, out); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(out), "evil")); err == nil {
			t.Fatalf("%s: wrote outside dst", name)
		}
	}
	if _, _, err := extractModuleZip(moduleZip(t, nil, prefix+"link"), prefix, t.TempDir()); err == nil {
		t.Error("a symlink entry was accepted")
	}
	// Releases go into a cleared workspace: a file left behind is a harness bug, not overwritten.
	if _, _, err := extractModuleZip(moduleZip(t, good, ""), prefix, dst); err == nil {
		t.Error("extracting over existing files succeeded")
	}
	if err := os.MkdirAll(filepath.Join(dst, ".plan", "objects"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := clearWorkspace(dst); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dst); len(entries) != 1 || entries[0].Name() != ".plan" {
		t.Errorf("clearWorkspace left %v", entries)
	}
	if _, _, err := extractModuleZip(moduleZip(t, good, ""), prefix, dst); err != nil {
		t.Errorf("extract into a cleared workspace: %v", err)
	}
}

func TestParseDownloads(t *testing.T) {
	out := []byte(`{"Path":"m","Version":"v2","Zip":"/c/v2.zip"}
{"Path":"m","Version":"v1","Zip":"/c/v1.zip"}`)
	zips, err := parseDownloads(out, "m", []string{"v1", "v2"})
	if err != nil || !slices.Equal(zips, []string{"/c/v1.zip", "/c/v2.zip"}) {
		t.Fatalf("%v %v", zips, err)
	}
	if _, err := parseDownloads(out, "m", []string{"v1", "v3"}); err == nil {
		t.Error("a version missing from the output was accepted")
	}
	failed := []byte(`{"Path":"m","Version":"v1","Error":"unknown revision v1"}`)
	if _, err := parseDownloads(failed, "m", []string{"v1"}); err == nil || !strings.Contains(err.Error(), "unknown revision") {
		t.Errorf("a failed download: %v", err)
	}
	if _, err := parseDownloads([]byte("not json"), "m", []string{"v1"}); err == nil {
		t.Error("garbage was accepted")
	}
}

func TestStoreSizes(t *testing.T) {
	objects := t.TempDir()
	writeTree(t, objects, map[string]string{
		"packs/a.pack": "1234567890", "packs/a.idx": "123", "packs/b.pack": "12",
		"tmp/c.pack": "leftover not counted", "damaged": "not counted",
		"records/0001-ab": "12345", "records/pending/0002-cd": "1",
	})
	packs, records, err := planStoreBytes(objects)
	if err != nil || packs != 15 || records != 6 {
		t.Fatalf("packs %d records %d: %v", packs, records, err)
	}
	if total, err := dirBytes(objects); err != nil || total != 15+6+int64(len("leftover not counted")+len("not counted")) {
		t.Errorf("dirBytes = %d, %v", total, err)
	}
	empty := t.TempDir()
	writeTree(t, empty, map[string]string{"records/0001-ab": "1"})
	if _, _, err := planStoreBytes(empty); err == nil {
		t.Error("a store without packs was measured")
	}

	pass := func(o, g float64) bool { return o <= g }
	if r := sizeResult("s", "s", 200, 100, "git objects", "<= 1x git", pass, ""); r.Status != statusFail || ratioText(r) != "2.00x of git" {
		t.Errorf("%+v %q", r, ratioText(r))
	}
	if r := sizeResult("s", "s", 90, 100, "git objects", "<= 1x git", pass, ""); r.Status != statusPass {
		t.Errorf("%+v", r)
	}
}

func TestPlanFileTextParses(t *testing.T) {
	cmds := []string{"cp -R " + shellQuote("/tmp/it's: a \"dir\"/.") + " .", "echo '#1' && true"}
	text := planFileText("bench-inrun", cmds)
	path := filepath.Join(t.TempDir(), "bench.yaml")
	if err := os.WriteFile(path, text, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := bootstrap.LoadPlanFile(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if f.Name != "bench-inrun" || len(f.Decisions) != 3 {
		t.Fatalf("%+v", f)
	}
	for k, c := range cmds {
		if d := f.Decisions[k]; d.Run != c || d.ID != "change-"+string(rune('0'+k)) {
			t.Errorf("decision %d: %+v, want run %q", k, d, c)
		}
	}
	if d := f.Decisions[2]; d.ID != "end" || d.Run != "true" {
		t.Errorf("last decision %+v", d)
	}
}

func TestShellQuote(t *testing.T) {
	for _, s := range []string{"plain", "it's", "a b", `$HOME "x" \n`, "''", ""} {
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("%q came back as %q (%v)", s, out, err)
		}
	}
}

func TestStageChangeWritesTheWorkspaceRewrite(t *testing.T) {
	w := planWorkload(filepath.Join(t.TempDir(), "ws"), 60, 5)
	if err := w.write(context.Background()); err != nil {
		t.Fatal(err)
	}
	idx := w.pickChanges(6, 300)
	stage := filepath.Join(t.TempDir(), "stage")
	if err := stageChange(context.Background(), w, idx, 300, stage); err != nil {
		t.Fatal(err)
	}
	if err := w.rewrite(context.Background(), idx, 300); err != nil {
		t.Fatal(err)
	}
	for _, i := range idx {
		staged, err := os.ReadFile(filepath.Join(stage, filepath.FromSlash(w.files[i].rel)))
		if err != nil {
			t.Fatal(err)
		}
		live, _ := os.ReadFile(w.path(i))
		if sha256.Sum256(staged) != sha256.Sum256(live) {
			t.Errorf("%s: staged content differs from the workspace rewrite", w.files[i].rel)
		}
	}
	if w.root == stage {
		t.Fatal("stageChange moved the workload")
	}
}

func TestInRunSamples(t *testing.T) {
	var v runView
	for _, d := range []struct{ id, cp string }{{"change-0", "c0"}, {"change-1", "c1"}, {"end", "c2"}} {
		v.Decisions = append(v.Decisions, struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			CheckpointID string `json:"checkpoint_id"`
		}{d.id, "succeeded", d.cp})
	}
	cps := []listedCheckpoint{
		{ID: "c0", Type: "pre_decision", DurationMs: 900, StoredBytes: 1000},
		{ID: "c1", Type: "pre_decision", DurationMs: 12.5, StoredBytes: 3},
		{ID: "c2", Type: "pre_decision", DurationMs: 10, StoredBytes: 4},
		{ID: "m", Type: "manual", DurationMs: 50},
	}
	ours, stored, err := inRunSamples(v, cps)
	if err != nil || !slices.Equal(ours, []time.Duration{12500 * time.Microsecond, 10 * time.Millisecond}) || stored != 7 {
		t.Fatalf("%v %d %v: want the checkpoints after the first", ours, stored, err)
	}
	if err := allSucceeded(v, 3, true); err != nil {
		t.Error(err)
	}
	if err := allSucceeded(v, 4, true); err == nil {
		t.Error("a missing decision passed")
	}

	bad := map[string][]listedCheckpoint{
		"missing":       cps[:2],
		"wrong type":    {cps[0], cps[1], {ID: "c2", Type: "pre_rollback", DurationMs: 1}},
		"zero duration": {cps[0], cps[1], {ID: "c2", Type: "pre_decision"}},
	}
	for name, list := range bad {
		if _, _, err := inRunSamples(v, list); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	v.Decisions[1].Status = "failed"
	if err := allSucceeded(v, 3, true); err == nil {
		t.Error("a failed decision passed")
	}
	v.Decisions[1].Status, v.Decisions[2].CheckpointID = "succeeded", ""
	if err := allSucceeded(v, 3, true); err == nil {
		t.Error("a decision without a checkpoint passed")
	}
	if _, _, err := inRunSamples(runView{Decisions: v.Decisions[:1]}, cps); err == nil {
		t.Error("a run of one decision gave samples")
	}
}

// TestShadowGitBaselines runs the git baselines on a small tree: status is empty right after a
// commit and lists a change, ls-files counts, and gc leaves a packed store.
func TestShadowGitBaselines(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	writeTree(t, ws, map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", ".plan/plan.db": "not tracked"})
	g := &shadowGit{r: &runner{ctx: context.Background()}, gitDir: filepath.Join(dir, "shadow.git"), ws: ws}
	if err := g.initRepo(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.commit(); err != nil {
		t.Fatal(err)
	}
	if n, err := g.trackedFiles(); err != nil || n != 2 {
		t.Fatalf("tracked %d files (%v), want 2: .plan is excluded", n, err)
	}
	if m, err := g.status(); err != nil || len(bytes.TrimSpace(m.stdout)) != 0 {
		t.Fatalf("status after commit: %q %v", m.stdout, err)
	}
	writeTree(t, ws, map[string]string{"a.txt": "changed\n"})
	if m, err := g.status(); err != nil || !strings.Contains(string(m.stdout), "a.txt") {
		t.Fatalf("status after a change: %q %v", m.stdout, err)
	}
	if _, err := g.gcAggressive(); err != nil {
		t.Fatal(err)
	}
	packs, err := filepath.Glob(filepath.Join(g.gitDir, "objects", "pack", "*.pack"))
	if err != nil || len(packs) != 1 {
		t.Fatalf("after gc: packs %v (%v)", packs, err)
	}
	if n, err := dirBytes(filepath.Join(g.gitDir, "objects")); err != nil || n == 0 {
		t.Fatalf("objects size %d, %v", n, err)
	}
}
