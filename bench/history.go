package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// historyModule is the real history the storage row replays: a busy Go module whose releases
// change a few dozen of its ~800 files each.
const historyModule = "golang.org/x/net"

// historyReleases are 12 consecutive releases of historyModule, oldest first: the newest 12 when
// this list was written. Fixed, so that runs compare.
var historyReleases = []string{
	"v0.51.0", "v0.52.0", "v0.53.0", "v0.54.0", "v0.55.0", "v0.56.0",
	"v0.57.0", "v0.58.0", "v0.59.0", "v0.60.0", "v0.61.0", "v0.62.0",
}

// historyOnly says whether -only names the history phase.
func historyOnly(only string) bool { return strings.TrimSpace(only) == "history" }

// history replays historyReleases into one workspace, a plan checkpoint and a shadow git commit
// per release, then compares plan's store with git's once git has packed it as tightly as it can.
func (b *bench) history() error {
	dir := filepath.Join(b.base, "history")
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o750); err != nil {
		return err
	}
	info := &historyInfo{Module: historyModule, Versions: historyReleases}
	b.rep.History = info
	s, err := b.newSubject(dir, "history_", "x/net history: ", nil, 0)
	if err != nil {
		return err
	}
	target := fmt.Sprintf("<= %gx git", historyGitFactor)
	start := time.Now()
	zips, err := downloadModule(b.ctx, dir, historyModule, historyReleases)
	if err != nil {
		b.logf("history: %v", err)
		id, name := s.row("store_vs_git", "store (packs+idx)")
		b.rep.add(result{ID: id, Name: name, Unit: "bytes", Status: statusNA, Target: target,
			Note: "could not download the releases: " + err.Error()})
		return nil
	}
	b.logf("history: %d releases of %s downloaded in %v", len(zips), historyModule, time.Since(start).Round(time.Millisecond))

	if err := s.plan.init(); err != nil {
		return fmt.Errorf("plan init failed: %w", err)
	}
	if err := s.git.initRepo(); err != nil {
		return err
	}
	var ours, git []time.Duration
	for i, z := range zips {
		if err := clearWorkspace(ws); err != nil {
			return err
		}
		files, size, err := extractModuleZip(z, historyModule+"@"+historyReleases[i]+"/", ws)
		if err != nil {
			return fmt.Errorf("%s@%s: %w", historyModule, historyReleases[i], err)
		}
		info.Files, info.Bytes = files, size
		d, cpv, err := s.checkpoint()
		if err != nil {
			return err
		}
		ours = append(ours, d)
		dg, err := s.gitCommit()
		if err != nil {
			return err
		}
		git = append(git, dg)
		b.logf("history %s: %d files, %s; checkpoint %v (%d files, stored %s), git %v", historyReleases[i], files,
			humanBytes(size), d.Round(time.Millisecond), cpv.Files, humanBytes(cpv.StoredBytes), dg.Round(time.Millisecond))
	}

	syscall.Sync()
	gc, err := s.git.gcAggressive()
	if err != nil {
		return err
	}
	// As git's, plan's store packed as tightly as it can: gc --aggressive repacks what is live
	// (small files bundled, deltas against similar files, strong compression), off the hot path.
	ourGC, err := s.plan.r.run(ws, nil, b.planBin, "-C", ws, "--json", "gc", "--aggressive")
	if err != nil {
		return fmt.Errorf("plan gc --aggressive: %w", err)
	}
	var repack struct {
		Repack *struct {
			Bundles int `json:"bundles"`
			Bundled int `json:"bundled"`
			Similar int `json:"similar"`
		} `json:"repack"`
	}
	if err := json.Unmarshal(ourGC.stdout, &repack); err != nil {
		return fmt.Errorf("plan gc --aggressive printed no JSON: %w: %s", err, ourGC.stdout)
	}
	if repack.Repack == nil {
		return fmt.Errorf("plan gc --aggressive printed no repack: %s", ourGC.stdout)
	}
	b.logf("history: plan gc --aggressive %v (%d files in %d bundles, %d deltas against a similar file)", ourGC.wall.Round(time.Millisecond),
		repack.Repack.Bundled, repack.Repack.Bundles, repack.Repack.Similar)
	gitBytes, err := dirBytes(filepath.Join(s.git.gitDir, "objects"))
	if err != nil {
		return err
	}
	packs, records, err := planStoreBytes(filepath.Join(historyDir(ws), "objects"))
	if err != nil {
		return err
	}
	b.logf("history: git gc --aggressive %v; git objects %s, plan packs %s, records %s", gc.wall.Round(time.Millisecond),
		humanBytes(gitBytes), humanBytes(packs), humanBytes(records))

	const gitName = "git objects/ after gc --aggressive --prune=now"
	id, name := s.row("gc_aggressive_vs_git", "gc --aggressive")
	b.rep.add(timeResult(id, name, []time.Duration{ourGC.wall}, []time.Duration{gc.wall}, "git gc --aggressive --prune=now", "-",
		nil))
	pass := func(o, g float64) bool { return o <= historyGitFactor*g }
	id, name = s.row("store_vs_git", "store (packs+idx)")
	b.rep.add(sizeResult(id, name, packs, gitBytes, gitName, target, pass,
		fmt.Sprintf("%d releases %s..%s; ours is the store's objects/packs (*.pack, *.idx) after plan gc --aggressive, the content plan rolls back from",
			len(historyReleases), historyReleases[0], historyReleases[len(historyReleases)-1])))
	id, name = s.row("store_records_vs_git", "store (packs+idx+records)")
	b.rep.add(sizeResult(id, name, packs+records, gitBytes, gitName, target, pass,
		fmt.Sprintf("ours adds objects/records (%s): the metadata rows a rebuild replays, as git's commits are in its packs",
			humanBytes(records))))
	id, name = s.row("checkpoint_vs_git", "checkpoint per release")
	b.rep.add(timeResult(id, name, ours, git, "git add -A && commit", "-", nil))
	return nil
}

// sizeResult is a bytes row comparing ours with base.
func sizeResult(id, name string, ours, base int64, baseName, target string, pass func(o, b float64) bool, note string) result {
	res := result{ID: id, Name: name, Unit: "bytes", Ours: float64(ours), Baseline: float64(base), BaselineName: baseName,
		Target: target, Status: statusFail, Note: note}
	if ours > 0 {
		res.Ratio = res.Baseline / res.Ours
	}
	if pass(res.Ours, res.Baseline) {
		res.Status = statusPass
	}
	return res
}

// downloadModule fetches module at versions through the go command (the module proxy and cache)
// and returns their zip files, in the order of versions. It runs in dir, outside any module, so
// no go.mod is touched.
func downloadModule(ctx context.Context, dir, module string, versions []string) ([]string, error) {
	args := []string{"mod", "download", "-json"}
	for _, v := range versions {
		args = append(args, module+"@"+v)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	// go mod download -json prints an object per module even when some fail; the objects say why.
	zips, perr := parseDownloads(out, module, versions)
	if perr != nil {
		return nil, errors.Join(perr, err, errors.New(strings.TrimSpace(stderr.String())))
	}
	if err != nil {
		return nil, fmt.Errorf("go mod download: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return zips, nil
}

// parseDownloads reads `go mod download -json`'s stream of objects into the zip of each version.
func parseDownloads(out []byte, module string, versions []string) ([]string, error) {
	byVersion := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var d struct{ Path, Version, Zip, Error string }
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go mod download printed no JSON: %w", err)
		}
		if d.Error != "" {
			return nil, fmt.Errorf("%s@%s: %s", d.Path, d.Version, d.Error)
		}
		if d.Path == module && d.Zip != "" {
			byVersion[d.Version] = d.Zip
		}
	}
	zips := make([]string, len(versions))
	for i, v := range versions {
		if zips[i] = byVersion[v]; zips[i] == "" {
			return nil, fmt.Errorf("go mod download gave no zip for %s@%s", module, v)
		}
	}
	return zips, nil
}

// clearWorkspace removes everything in ws but plan's state directory.
func clearWorkspace(ws string) error {
	entries, err := os.ReadDir(ws)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == ".plan" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(ws, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// extractModuleZip writes the files of a module zip, whose every name starts with prefix
// ("module@version/"), into dst. A name that would land outside dst or in its .plan or .git is
// refused: the zip comes from the network.
func extractModuleZip(zipPath, prefix, dst string) (files int, size int64, err error) {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if cerr := zr.Close(); err == nil {
			err = cerr
		}
	}()
	for _, f := range zr.File {
		rel, ok := strings.CutPrefix(f.Name, prefix)
		first, _, _ := strings.Cut(rel, "/")
		if !ok || !filepath.IsLocal(rel) || first == ".plan" || first == ".git" {
			return files, size, fmt.Errorf("%s: unexpected entry %q", zipPath, f.Name)
		}
		if strings.HasSuffix(rel, "/") {
			continue // a directory entry; its files create it
		}
		if !f.Mode().IsRegular() {
			return files, size, fmt.Errorf("%s: %q is not a regular file", zipPath, f.Name)
		}
		n, err := extractFile(f, filepath.Join(dst, filepath.FromSlash(rel)))
		if err != nil {
			return files, size, fmt.Errorf("%s: %s: %w", zipPath, f.Name, err)
		}
		files++
		size += n
	}
	return files, size, nil
}

func extractFile(f *zip.File, target string) (n int64, err error) {
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return 0, err
	}
	rc, err := f.Open()
	if err != nil {
		return 0, err
	}
	defer func() { _ = rc.Close() }()
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) // #nosec G304 -- a checked local name under dst
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	// archive/zip fails the read when the data exceeds the size or misses the CRC the zip declares.
	return io.Copy(out, rc) // #nosec G110 -- bounded by the declared size, see above
}

// dirBytes is the total size of the regular files under dir.
func dirBytes(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	return total, err
}

// planStoreBytes splits a store's size into its packs (.pack and .idx files) and its records.
func planStoreBytes(objects string) (packs, records int64, err error) {
	if packs, err = globBytes(filepath.Join(objects, "packs", "*.pack"), filepath.Join(objects, "packs", "*.idx")); err != nil {
		return 0, 0, err
	}
	if records, err = dirBytes(filepath.Join(objects, "records")); err != nil {
		return 0, 0, err
	}
	if packs == 0 {
		return 0, 0, fmt.Errorf("%s holds no pack", objects)
	}
	return packs, records, nil
}

func globBytes(patterns ...string) (int64, error) {
	var total int64
	for _, p := range patterns {
		names, err := filepath.Glob(p)
		if err != nil {
			return 0, err
		}
		for _, n := range names {
			info, err := os.Stat(n)
			if err != nil {
				return 0, err
			}
			total += info.Size()
		}
	}
	return total, nil
}
