package hostile

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gc --aggressive against a hostile environment: killed at each step of its repack (new packs
// installed, then the old ones deleted under gc's intent) and at random moments. Every checkpoint
// must verify and restore byte for byte after the kill, and the next gc --aggressive completes.

// sourceHistory makes n checkpoints of a source tree: small files in a few directories, edited,
// appended to or left alone, and two larger similar files; it returns the checkpoints' IDs and,
// for each, the content of every file, oldest first.
func sourceHistory(w *workspace, r *rand.Rand, n int) ([]string, []map[string]string) {
	w.t.Helper()
	cur := map[string]string{}
	line := func() string {
		return fmt.Sprintf("\tx%d := compute(%d, %q)\n", r.IntN(100), r.IntN(1000), []string{"alpha", "beta", "gamma"}[r.IntN(3)])
	}
	for i := range 60 {
		var b strings.Builder
		fmt.Fprintf(&b, "package p%d\n\n// file %d\n", i%4, i)
		for range 40 + r.IntN(80) {
			b.WriteString(line())
		}
		cur[fmt.Sprintf("pkg%d/f%02d.go", i%4, i)] = b.String()
	}
	var table strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&table, "\t{%d, %d, %q},\n", i, r.IntN(1<<20), fmt.Sprint(i*7))
	}
	cur["tables/v1.go"] = table.String()
	cur["tables/v2.go"] = strings.Replace(table.String(), "{17,", "{17000,", 1) + "// v2\n"
	var ids []string
	var states []map[string]string
	for c := range n {
		if c > 0 {
			for rel, content := range cur {
				switch r.IntN(4) {
				case 0:
					cur[rel] = content + line()
				case 1:
					cur[rel] = strings.Replace(content, "compute", fmt.Sprintf("compute%d", c), 1)
				}
			}
		}
		st := map[string]string{}
		for rel, content := range cur {
			w.write(rel, content)
			st[rel] = content
		}
		ids = append(ids, w.checkpoint(fmt.Sprintf("source %d", c)))
		states = append(states, st)
	}
	return ids, states
}

// requireRepacked runs gc --aggressive to completion and requires it to bundle files, then every
// checkpoint to verify and restore.
func requireRepacked(w *workspace, ids []string, states []map[string]string, context string) {
	w.t.Helper()
	var gc struct {
		Repack *struct {
			Bundles int `json:"bundles"`
			Bundled int `json:"bundled"`
		} `json:"repack"`
	}
	w.mustJSON(&gc, "gc", "--aggressive")
	if gc.Repack == nil || gc.Repack.Bundles == 0 || gc.Repack.Bundled == 0 {
		w.t.Fatalf("%s: gc --aggressive bundled nothing: %+v", context, gc.Repack)
	}
	w.must("verify", "--read-data")
	w.must("doctor")
	for i, id := range ids {
		requireRestores(w, id, states[i], context)
	}
}

func TestHostileRepackKilledAtEachStep(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 27))
	for _, point := range []string{"store.pack-installed", "gc.repacked", "gc.intent", "gc.deleted-one"} {
		t.Run(point, func(t *testing.T) {
			w := newWorkspace(t, nil)
			ids, states := sourceHistory(w, r, 4)
			res := runPlan(t, w.dir, append(w.env, "PLAN_FAILPOINT="+point), "gc", "--aggressive")
			if !res.killed {
				t.Fatalf("gc --aggressive was not killed at %s: %s", point, res)
			}
			w.must("verify", "--read-data")
			w.must("doctor")
			for i, id := range ids {
				requireRestores(w, id, states[i], "after a kill at "+point)
			}
			requireRepacked(w, ids, states, "the gc after a kill at "+point)
		})
	}
}

func TestHostileRepackKilledAtRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 28))
	for trial := range trials(3) {
		w := newWorkspace(t, nil)
		ids, states := sourceHistory(w, r, 4)
		// A store repacked once already: the next repack re-bundles bundled files.
		if trial%2 == 1 {
			w.must("gc", "--aggressive")
		}
		p := startPlan(t, w.dir, w.env, "gc", "--aggressive")
		time.Sleep(time.Duration(r.IntN(300)) * time.Millisecond)
		res := p.kill(t)
		if !res.killed && res.code != 0 {
			t.Fatalf("trial %d: %s", trial, res)
		}
		context := fmt.Sprintf("trial %d (killed: %v)", trial, res.killed)
		w.must("verify", "--read-data")
		for i, id := range ids {
			requireRestores(w, id, states[i], context)
		}
		requireRepacked(w, ids, states, context)
	}
}

// A changed byte in a bundle is reported by verify for the files read from it, refused on
// rollback to a checkpoint that needs them, and healed by `verify --read-data --repair` from the
// workspace's files: verify is then clean and every checkpoint restores.
func TestHostileDamagedBundleIsHealed(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 29))
	w := newWorkspace(t, nil)
	ids, states := sourceHistory(w, r, 1)
	requireRepacked(w, ids, states, "repack")
	flipInPacks(w, r)
	res := w.run("verify", "--read-data")
	if res.code == 0 {
		t.Fatalf("verify of a damaged bundle passed: %s", res)
	}
	w.must("verify", "--read-data", "--repair")
	w.must("verify", "--read-data")
	requireRestores(w, ids[0], states[0], "after the repair")
}

// flipInPacks inverts one byte in the middle of the first bundle of the workspace's packs: a
// blob record (kind 1) followed by bundled blob records (kind 5), read as docs/store.md describes
// the format.
func flipInPacks(w *workspace, r *rand.Rand) {
	w.t.Helper()
	packs, err := filepath.Glob(w.state("objects/packs/*.pack"))
	if err != nil {
		w.t.Fatal(err)
	}
	for _, p := range packs {
		b, err := os.ReadFile(p)
		if err != nil {
			w.t.Fatal(err)
		}
		type rec struct {
			kind      byte
			data, end int
		}
		var recs []rec
		for off := 12; off < len(b); {
			kind := b[off]
			n := off + 33
			_, m := binary.Uvarint(b[n:])
			n += m
			comp, m := binary.Uvarint(b[n:])
			n += m
			recs = append(recs, rec{kind: kind, data: n, end: n + int(comp)})
			off = n + int(comp) + 8
		}
		for i := 0; i+1 < len(recs); i++ {
			if recs[i].kind != 1 || recs[i+1].kind != 5 {
				continue
			}
			at := recs[i].data + (recs[i].end-recs[i].data)/4 + r.IntN((recs[i].end-recs[i].data)/2)
			b[at] ^= 0x55
			if err := os.Chmod(p, 0o600); err != nil {
				w.t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				w.t.Fatal(err)
			}
			return
		}
	}
	w.t.Fatal("no bundle in the packs")
}
