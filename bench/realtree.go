package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// realTree is an existing directory tree used as a workspace: real file sizes, directory shapes and
// content, where the generated workload only imitates them.
type realTree struct {
	root  string
	seed  uint64
	rels  []string // regular files, slash-separated, in walk (lexical) order: what changes pick from
	links int      // symbolic links, which a checkpoint counts as files too
	dirs  int
	bytes int64 // of the regular files
}

// scanRealTree lists the files under root, leaving out plan's state directory.
func scanRealTree(root string, seed uint64) (*realTree, error) {
	t := &realTree{root: root, seed: seed}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		switch {
		case d.IsDir() && rel == ".plan":
			return filepath.SkipDir
		case d.IsDir():
			t.dirs++
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			t.rels = append(t.rels, filepath.ToSlash(rel))
			t.bytes += info.Size()
		case d.Type()&fs.ModeSymlink != 0:
			t.links++
		}
		return nil
	})
	if err == nil && len(t.rels) == 0 {
		err = fmt.Errorf("%s holds no regular file", root)
	}
	return t, err
}

func (t *realTree) count() int { return len(t.rels) }

func (t *realTree) entries() int64 { return int64(len(t.rels) + t.links) }

func (t *realTree) path(i int) string { return filepath.Join(t.root, filepath.FromSlash(t.rels[i])) }

func (t *realTree) pickChanges(count int, round uint64) []int {
	r := rand.New(rand.NewPCG(t.seed^0x2545f4914f6cdd1d, round)) // #nosec G404 -- reproducible test data
	perm := r.Perm(len(t.rels))
	return perm[:min(count, len(perm))]
}

// rewrite inserts one line into each file of idx, as an edit of a source file would.
func (t *realTree) rewrite(ctx context.Context, idx []int, gen uint64) error {
	for _, i := range idx {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := os.ReadFile(t.path(i))
		if err != nil {
			return err
		}
		// The file exists, so WriteFile keeps its mode.
		if err := os.WriteFile(t.path(i), editLine(data, gen, i), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// editLine returns data with one line inserted at the first line boundary at or after its middle
// (at the end when there is none). The line names gen and i, so every round's edit is new content.
func editLine(data []byte, gen uint64, i int) []byte {
	at := len(data)
	if nl := bytes.IndexByte(data[len(data)/2:], '\n'); nl >= 0 {
		at = len(data)/2 + nl + 1
	}
	line := fmt.Sprintf("// plan-bench edit %d of file %d\n", gen, i)
	out := make([]byte, 0, len(data)+len(line))
	out = append(out, data[:at]...)
	out = append(out, line...)
	return append(out, data[at:]...)
}

// goroot is the tree the real-tree workload copies: the Go distribution the benchmark runs with.
func goroot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w", err)
	}
	if dir == "" {
		return "", errors.New("go env GOROOT printed nothing")
	}
	return dir, nil
}

// realTree measures the four comparisons on a `cp -a` copy of GOROOT.
func (b *bench) realTree() error {
	src, err := goroot(b.ctx)
	if err != nil {
		return err
	}
	srcTree, err := scanRealTree(src, b.cfg.seed)
	if err != nil {
		return err
	}
	// The copy, cp -a's copy of it, the shadow repository and the store.
	if err := checkSpace(b.base, srcTree.bytes*4/3); err != nil {
		return err
	}
	dir := filepath.Join(b.base, "real")
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	start := time.Now()
	if _, err := b.r.quiet(dir, nil, "cp", "-a", src, ws); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	syscall.Sync()
	t, err := scanRealTree(ws, b.cfg.seed)
	if err != nil {
		return err
	}
	changed := b.changedCount(t.count())
	b.rep.RealTree = &treeInfo{Source: src, Files: t.count(), Symlinks: t.links, Dirs: t.dirs, Bytes: t.bytes, ChangedFiles: changed}
	b.logf("real tree: copied %s, %d files, %d symlinks, %d directories, %s, in %v", src, t.count(), t.links,
		t.dirs, humanBytes(t.bytes), time.Since(start).Round(time.Millisecond))
	s, err := b.newSubject(dir, "real_", "real tree: ", t, changed)
	if err != nil {
		return err
	}
	return b.measure(s, false)
}
