package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// sizeClass is the kind of file a workload entry is: most are small source files, some are mid-sized
// (generated code, lock files, fixtures), a few are large assets.
type sizeClass int

const (
	classSmall sizeClass = iota
	classMedium
	classLarge
)

// Per 10,000 files: 150 medium and 8 large, the rest small. With the size ranges below that is
// ~90 MB per 10k files, and the total scales linearly with the count.
const (
	mediumPer10k = 150
	largePer10k  = 8
	filesPerDir  = 35 // directories hold 20-50 files
	maxDepth     = 3  // directory levels below the workspace root (files sit one level deeper)
)

type fileSpec struct {
	rel    string // slash-separated path relative to the workspace root
	class  sizeClass
	size   int
	binary bool   // incompressible content (images, archives) instead of source-like text
	seed   uint64 // content seed: the same seed writes the same bytes
}

// workload is a generated workspace: the files it holds and where.
type workload struct {
	root  string
	seed  uint64
	files []fileSpec
	dirs  []string
}

// totalBytes is the logical size of the workload's files.
func (w *workload) totalBytes() int64 {
	var n int64
	for _, f := range w.files {
		n += int64(f.size)
	}
	return n
}

func (w *workload) count() int { return len(w.files) }

// entries is count: the generated workload holds regular files only.
func (w *workload) entries() int64 { return int64(len(w.files)) }

// planWorkload lays out n files deterministically from seed; it writes nothing.
func planWorkload(root string, n int, seed uint64) *workload {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) // #nosec G404 -- reproducible test data, not secrets
	w := &workload{root: root, seed: seed, dirs: layoutDirs(max(1, n/filesPerDir))}

	classes := make([]sizeClass, n)
	nLarge := (n*largePer10k + 5000) / 10000
	nMedium := (n*mediumPer10k + 5000) / 10000
	for i := range classes {
		switch {
		case i < nLarge:
			classes[i] = classLarge
		case i < nLarge+nMedium:
			classes[i] = classMedium
		}
	}
	r.Shuffle(n, func(i, j int) { classes[i], classes[j] = classes[j], classes[i] })

	exts := []string{".go", ".go", ".go", ".ts", ".md", ".py", ".json", ".yaml"}
	w.files = make([]fileSpec, n)
	for i := range w.files {
		f := fileSpec{class: classes[i], seed: r.Uint64()}
		ext := exts[r.IntN(len(exts))]
		switch f.class {
		case classSmall:
			f.size = 1024 + r.IntN(3*1024+1)
		case classMedium:
			f.size = 50*1024 + r.IntN(450*1024+1)
			f.binary = r.IntN(5) == 0
		case classLarge:
			f.size = 1024*1024 + r.IntN(4*1024*1024+1)
			f.binary = r.IntN(2) == 0
		}
		if f.binary {
			ext = ".bin"
		}
		dir := w.dirs[r.IntN(len(w.dirs))]
		f.rel = fmt.Sprintf("%s/file%06d%s", dir, i, ext)
		w.files[i] = f
	}
	return w
}

// layoutDirs returns at least want directory paths, breadth first, in a tree maxDepth deep.
func layoutDirs(want int) []string {
	fanout := 2
	for treeSize(fanout) < want {
		fanout++
	}
	names := []string{"src", "pkg", "internal", "lib", "app", "web", "docs", "tools", "api", "core"}
	var dirs []string
	frontier := []string{""}
	for depth := 0; depth < maxDepth && len(dirs) < want; depth++ {
		var next []string
		for _, parent := range frontier {
			for c := range fanout {
				name := fmt.Sprintf("%s%d", names[(depth*7+c)%len(names)], c)
				p := name
				if parent != "" {
					p = parent + "/" + name
				}
				next = append(next, p)
			}
		}
		dirs = append(dirs, next...)
		frontier = next
	}
	return dirs[:min(len(dirs), want)]
}

// write creates the workspace on disk, using every core.
func (w *workload) write(ctx context.Context) error {
	for _, d := range w.dirs {
		if err := os.MkdirAll(filepath.Join(w.root, filepath.FromSlash(d)), 0o750); err != nil {
			return err
		}
	}
	idx := make([]int, len(w.files))
	for i := range idx {
		idx[i] = i
	}
	return w.rewrite(ctx, idx, 0)
}

// rewrite writes files idx with content derived from generation gen (0 is the original content), so
// that replaying the same generation writes identical bytes.
func (w *workload) rewrite(ctx context.Context, idx []int, gen uint64) error {
	var (
		mu       sync.Mutex
		firstErr error // guarded by mu
		wg       sync.WaitGroup
	)
	jobs := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			var buf []byte
			for i := range jobs {
				mu.Lock()
				failed := firstErr != nil
				mu.Unlock()
				if failed {
					continue // keep draining so the producer finishes
				}
				f := w.files[i]
				size := f.size
				r := rand.New(rand.NewPCG(f.seed, gen)) // #nosec G404 -- reproducible test data
				if gen != 0 {
					// A rewrite keeps a similar size: within ±10%.
					size = max(1, size+r.IntN(size/5+1)-size/10)
				}
				buf = fill(buf[:0], r, size, f.binary)
				if err := os.WriteFile(w.path(i), buf, 0o600); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, i := range idx {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}

// path is the absolute path of file i.
func (w *workload) path(i int) string {
	return filepath.Join(w.root, filepath.FromSlash(w.files[i].rel))
}

// vocabulary is a small fixed pool of tokens: generated text then compresses like source code
// (~3-4x with zstd) while every file's content is unique.
var vocabulary = strings.Fields(`func return if else for range err nil ctx context string int64 error
	struct interface map chan go defer select case switch package import var const type true false
	len append make new copy delete panic recover fmt Errorf Sprintf strings Builder bytes Buffer
	checkpoint workspace store object tree entry path size mode hash digest journal rollback decision
	plan correction artifact archive manifest stat cache walker worker batch pack index offset reader
	writer encoder decoder sync mutex lock unlock close open create remove rename fsync directory
	Options Config Handler Service Repository Adapter New Load Save Update Delete List Find Get Set`)

var punctuation = []string{" ", " ", " ", " := ", " = ", ".", ", ", "(", ") ", " { ", " }", "[]", " != ", " == "}

// fill appends size bytes of content to buf: random bytes when incompressible, otherwise lines of
// source-like text.
func fill(buf []byte, r *rand.Rand, size int, incompressible bool) []byte {
	if incompressible {
		var word [8]byte
		for len(buf) < size {
			binary.LittleEndian.PutUint64(word[:], r.Uint64())
			buf = append(buf, word[:min(8, size-len(buf))]...)
		}
		return buf
	}
	for len(buf) < size {
		for range r.IntN(4) {
			buf = append(buf, '\t')
		}
		for n := 2 + r.IntN(8); n > 0; n-- {
			buf = append(buf, vocabulary[r.IntN(len(vocabulary))]...)
			if r.IntN(6) == 0 {
				buf = fmt.Appendf(buf, "%d", r.IntN(100000))
			}
			buf = append(buf, punctuation[r.IntN(len(punctuation))]...)
		}
		buf = append(buf, '\n')
	}
	return buf[:size]
}

// treeSize is the number of directories in a tree of maxDepth levels with the given fanout.
func treeSize(fanout int) int {
	total, level := 0, 1
	for range maxDepth {
		level *= fanout
		total += level
	}
	return total
}

// pickChanges chooses count distinct file indexes to change in round; the choice is reproducible.
func (w *workload) pickChanges(count int, round uint64) []int {
	r := rand.New(rand.NewPCG(w.seed^0x5bd1e995, round)) // #nosec G404 -- reproducible test data
	perm := r.Perm(len(w.files))
	return perm[:min(count, len(perm))]
}
