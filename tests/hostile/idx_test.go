package hostile

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The index is searched in the idx files as they lie (each checked whole when a command first
// finds an object in it, or goes through every object, nothing built from it): damage to one is
// still refused by every command that reads objects or deletes packs, named with the repair, and `plan doctor --repair` rebuilds it from its pack, after which every
// checkpoint verifies and restores byte for byte.

// largestIdx is the path of the store's largest idx file (the one most objects are looked up in).
func largestIdx(w *workspace) string {
	w.t.Helper()
	idxs, err := filepath.Glob(w.state("objects/packs/*.idx"))
	if err != nil || len(idxs) == 0 {
		w.t.Fatalf("no idx files: %v", err)
	}
	best, size := "", int64(-1)
	for _, p := range idxs {
		if fi, err := os.Stat(p); err == nil && fi.Size() > size {
			best, size = p, fi.Size()
		}
	}
	return best
}

func TestHostileDamagedIdxIsRefusedThenRepaired(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 31))
	damage := map[string]func(b []byte) []byte{
		"truncated":       func(b []byte) []byte { return b[:len(b)-1-r.IntN(len(b)/2)] },
		"entry byte":      func(b []byte) []byte { b[12+r.IntN(len(b)-12-32)] ^= 0x40; return b },
		"checksum byte":   func(b []byte) []byte { b[len(b)-1-r.IntN(32)] ^= 0x01; return b },
		"header, cleared": func(b []byte) []byte { clear(b[:12]); return b },
	}
	for name, spoil := range damage {
		t.Run(name, func(t *testing.T) {
			w := newWorkspace(t, nil)
			ids, states := smallPackHistory(w, r, 4)
			idx := largestIdx(w)
			b, err := os.ReadFile(idx)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(idx, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(idx, spoil(b), 0o600); err != nil {
				t.Fatal(err)
			}
			// An idx is checked whole at its first use, not at open: gc, which weighs every object,
			// checks every idx first and deletes nothing over a damaged one, whether or not a
			// command used it before.
			packs, _ := filepath.Glob(w.state("objects/packs/*"))
			if res := w.expect(6, "integrity", "gc", "--grace", "0s"); !strings.Contains(res.stdout+res.stderr, "doctor --repair") {
				t.Errorf("gc's refusal does not name the repair: %s", res)
			}
			if after, _ := filepath.Glob(w.state("objects/packs/*")); !slices.Equal(packs, after) {
				t.Fatalf("gc over a damaged idx changed the packs: %v -> %v", packs, after)
			}
			w.write("calls/after.txt", "after the damage\n")
			res := w.expect(6, "integrity", "checkpoint", "create", "--note", "over a damaged idx")
			if !strings.Contains(res.stdout+res.stderr, "doctor --repair") {
				t.Errorf("the refusal does not name the repair: %s", res)
			}
			w.must("doctor", "--repair")
			if got, err := os.ReadFile(idx); err != nil || len(got) != len(b) {
				t.Errorf("doctor --repair did not rebuild %s (%d bytes, want %d): %v", filepath.Base(idx), len(got), len(b), err)
			}
			if err := os.Remove(w.path("calls/after.txt")); err != nil {
				t.Fatal(err)
			}
			requireEveryCheckpoint(w, ids, states, "after "+name+" damage was repaired")
		})
	}
}

// Hooks killed at random moments of a long session (while a checkpoint's pack and idx are
// written, while the call and its checkpoint commit, while packs are merged after it) leave every
// recorded call with its checkpoint, and the store verifies.
func TestHostileHooksKilledAtRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 32))
	for trial := range trials(2) {
		w := newWorkspace(t, []string{"PLAN_WATCH=0"})
		s := agentSession{w: w, id: fmt.Sprintf("killed-%d", trial)}
		for i := range 20 {
			id := fmt.Sprintf("toolu_%02d", i)
			w.write(fmt.Sprintf("calls/c%02d.txt", i), fmt.Sprintf("call %d %x\n", i, r.Uint64()))
			for _, event := range []string{"PreToolUse", "PostToolUse"} {
				if r.IntN(3) > 0 {
					s.send(t, nil, event, bashCall(id, "edit")) // a warning at most: its pre may have been killed
					continue
				}
				m := map[string]any{"session_id": s.id, "cwd": w.dir, "hook_event_name": event, "transcript_path": "/dev/null", "permission_mode": "default"}
				for k, v := range bashCall(id, "edit") {
					m[k] = v
				}
				payload, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				p := startHook(t, w, event, string(payload))
				time.Sleep(time.Duration(r.IntN(40)) * time.Millisecond)
				if res := p.kill(t); !res.killed && res.code != 0 {
					t.Fatalf("trial %d, %s %s: %s", trial, event, id, res)
				}
			}
		}
		w.must("verify", "--read-data")
		var listed struct {
			Sessions []struct {
				Turns []struct {
					Calls []struct {
						ID         string  `json:"id"`
						Checkpoint *string `json:"checkpoint"`
					} `json:"tool_calls"`
				} `json:"turns"`
			} `json:"sessions"`
		}
		w.mustJSON(&listed, "sessions", s.id)
		n := 0
		for _, sess := range listed.Sessions {
			for _, turn := range sess.Turns {
				for _, c := range turn.Calls {
					n++
					if c.Checkpoint == nil || *c.Checkpoint == "" {
						t.Fatalf("trial %d: call %s is recorded without its checkpoint", trial, c.ID)
					}
					w.must("checkpoint", "show", *c.Checkpoint)
				}
			}
		}
		if n == 0 {
			t.Fatalf("trial %d: no call of the session was recorded", trial)
		}
	}
}

// startHook starts `plan hook claude event` in w with payload on stdin, as startPlan does.
func startHook(t *testing.T, w *workspace, event, payload string) *running {
	t.Helper()
	args := []string{"hook", "claude", event}
	p := &running{args: args, cmd: command(t, "", w.env, payload, args...), done: make(chan struct{})}
	p.cmd.Dir = w.dir
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errb
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}
