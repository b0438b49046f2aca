package hostile

import (
	"bytes"
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/mattn/go-sqlite3" // the SQLite driver plan itself uses, to find a page to damage

	"github.com/planhq/plan/tests/testkit/servertest"
)

// Metadata loss: the database lost what its records hold (an older backup restored, rows lost,
// the file deleted while a run writes, a damaged schema page). Every command refuses a database
// that is behind its records, and `plan doctor --rebuild` brings it back whole, so no checkpoint
// that reported success is lost and gc never deletes what only the records still reference.

// metadataRebuild is what `doctor --rebuild --json` prints.
type metadataRebuild struct {
	Rebuilt     bool   `json:"rebuilt"`
	Checkpoints int    `json:"checkpoints"`
	KeptAside   string `json:"kept_aside"`
}

// metadataList returns the IDs `checkpoint list` shows.
func metadataList(w *workspace) []string {
	w.t.Helper()
	var cps []struct {
		ID string `json:"id"`
	}
	w.mustJSON(&cps, "checkpoint", "list")
	ids := make([]string, len(cps))
	for i, c := range cps {
		ids[i] = c.ID
	}
	return ids
}

// metadataRefusesBehind requires args to exit 6 (integrity) naming `plan doctor --rebuild`.
func metadataRefusesBehind(w *workspace, args ...string) {
	w.t.Helper()
	r := w.expect(6, "integrity", args...)
	if !strings.Contains(r.stderr, "plan doctor --rebuild") {
		w.t.Fatalf("the refusal does not name plan doctor --rebuild\n%s", r)
	}
}

// metadataDoctorSeesBehind requires `plan doctor` to report the database behind the store (exit
// 6), advising `plan doctor --rebuild`.
func metadataDoctorSeesBehind(w *workspace) {
	w.t.Helper()
	r := w.expect(6, "integrity", "doctor")
	if !strings.Contains(r.stdout, "behind the store") || !strings.Contains(r.stdout, "plan doctor --rebuild") {
		w.t.Fatalf("doctor does not report the database behind the store\n%s", r)
	}
}

// metadataRollsBackTo requires a rollback to id to bring rel's content back byte for byte.
func metadataRollsBackTo(w *workspace, id, rel, want string) {
	w.t.Helper()
	w.must("rollback", "--to-checkpoint", id, "--yes")
	if got := w.read(rel); got != want {
		w.t.Fatalf("%s after rolling back to %s: %d bytes, want the %d it held", rel, id, len(got), len(want))
	}
}

// metadataBlob is content no other checkpoint holds.
func metadataBlob(seed string) string { return strings.Repeat(seed+" ", 20000) }

// Finding (outdated-db-gc-loss, sqlite-older-backup-masked): plan.db restored from an older backup
// was used by every command; gc deleted the content of the checkpoints only the records knew, and
// one more write made doctor call the database healthy and `doctor --rebuild` leave it alone.
func TestMetadataOlderSQLiteBackup(t *testing.T) {
	w := newWorkspace(t, nil)
	w.write("f", "v1")
	w.checkpoint("one")
	db := w.state("plan.db")
	backup, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	lostContent := metadataBlob("only the records know this")
	w.write("f", lostContent)
	lost := w.checkpoint("after the backup")
	w.write("f", "v3")
	for _, s := range []string{"-wal", "-shm"} {
		_ = os.Remove(db + s)
	}
	if err := os.WriteFile(db, backup, 0o600); err != nil {
		t.Fatal(err)
	}

	metadataRefusesBehind(w, "gc")
	metadataRefusesBehind(w, "checkpoint", "create", "--note", "would hide the gap")
	metadataRefusesBehind(w, "checkpoint", "prune", "--keep", "1", "--yes")
	metadataRefusesBehind(w, "rollback", "--to-checkpoint", lost, "--yes")
	metadataDoctorSeesBehind(w)

	var rb metadataRebuild
	w.mustJSON(&rb, "doctor", "--rebuild")
	if !rb.Rebuilt || rb.Checkpoints != 2 || rb.KeptAside == "" {
		t.Fatalf("doctor --rebuild: %+v; want the 2 checkpoints back, the old file kept aside", rb)
	}
	if ids := metadataList(w); !slices.Contains(ids, lost) {
		t.Fatalf("checkpoint list %v lacks %s", ids, lost)
	}
	w.must("gc")
	metadataRollsBackTo(w, lost, "f", lostContent)
}

// Finding (rebuild-during-run-behind): plan.db deleted while `plan run` works, and `doctor
// --rebuild` started during the run, built a database without the run's last transactions (the
// operation log it writes after its lock is released), said rebuilt: true, and one more command
// made that gap look healthy for good.
func TestMetadataDatabaseDeletedDuringARun(t *testing.T) {
	for trial := range trials(2) {
		w := newWorkspace(t, nil)
		planFile := filepath.Join(t.TempDir(), "p.yaml")
		if err := os.WriteFile(planFile, []byte("name: s\ndecisions:\n"+
			"  - {id: a, run: \"echo a > a\"}\n"+
			"  - {id: b, run: \"sleep 1; echo b > b\"}\n"+
			"  - {id: c, run: \"echo c > c\"}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		run := startPlan(t, w.dir, nil, "-q", "run", planFile)
		time.Sleep(500 * time.Millisecond)
		for _, s := range []string{"", "-wal", "-shm"} {
			_ = os.Remove(w.state("plan.db" + s))
		}
		var rb metadataRebuild
		w.mustJSON(&rb, "doctor", "--rebuild")
		if r := run.wait(t); r.code != 0 {
			t.Fatalf("trial %d: %s", trial, r)
		}
		// The rebuilt database holds the whole run, or refuses until rebuilt again: a write now
		// must not hide a gap.
		if r := w.run("--json", "checkpoint", "create", "--note", "after"); r.code != 0 {
			if r.code != 6 || !strings.Contains(r.stderr, "plan doctor --rebuild") {
				t.Fatalf("trial %d: %s", trial, r)
			}
			w.mustJSON(&rb, "doctor", "--rebuild")
		}
		var hist []struct {
			Kind string `json:"kind"`
		}
		w.mustJSON(&hist, "history")
		var kinds []string
		for _, h := range hist {
			kinds = append(kinds, h.Kind)
		}
		if n := strings.Count(strings.Join(kinds, " "), "decision"); n != 3 || !slices.Contains(kinds, "run") {
			t.Fatalf("trial %d: history %v after the rebuild; want the run and its 3 decisions", trial, kinds)
		}
		w.must("doctor")
	}
}

// Finding (rebuild-refuses-damaged-schema-page): a damaged page under schema_migrations made every
// command, `doctor --rebuild` included, answer "upgrade plan" (exit 5) or an internal error.
func TestMetadataDamagedSchemaPage(t *testing.T) {
	w := newWorkspace(t, nil)
	contents := map[string]string{}
	for _, n := range []string{"a", "b", "c"} {
		w.write("f", metadataBlob(n))
		contents[w.checkpoint(n)] = metadataBlob(n)
	}
	dbPath := w.state("plan.db")
	conn, err := sql.Open("sqlite3", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	var root, size int64
	if err := conn.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 'schema_migrations'`).Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	healthy, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, fill := range []byte{0x7f, 0x01} {
		damaged := bytes.Clone(healthy)
		for i := (root-1)*size + 100; i < root*size-100; i++ {
			damaged[i] = fill
		}
		if err := os.WriteFile(dbPath, damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		metadataRefusesBehind(w, "status")
		var rb metadataRebuild
		w.mustJSON(&rb, "doctor", "--rebuild")
		if !rb.Rebuilt || rb.Checkpoints != 3 || rb.KeptAside == "" {
			t.Fatalf("fill %#x: doctor --rebuild %+v; want the 3 checkpoints, the damaged file kept aside", fill, rb)
		}
		if kept, err := os.ReadFile(rb.KeptAside); err != nil || !bytes.Equal(kept, damaged) {
			t.Fatalf("fill %#x: the damaged file was not kept aside as it was (%v)", fill, err)
		}
	}
	for id, want := range contents {
		metadataRollsBackTo(w, id, "f", want)
	}
}

// Finding (db-behind-store-masked): a shared PostgreSQL database that lost its newest committed
// transactions was flagged by doctor only until the next write; after it, doctor said ok and
// `doctor --rebuild` left the lost checkpoint missing for good.
func TestMetadataPostgresBehindTheStore(t *testing.T) {
	dsn := servertest.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	store := "file://" + filepath.Join(t.TempDir(), "store")
	w := newWorkspace(t, []string{"PGPASSWORD=" + password}, "--store", store, "--db", u.String())
	w.write("f", "v1")
	w.checkpoint("one")
	lostContent := metadataBlob("lost row")
	w.write("f", lostContent)
	lost := w.checkpoint("its row is lost")
	w.write("f", "v3")

	config, err := os.ReadFile(w.path(".plan/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ws string
	for _, line := range strings.Split(string(config), "\n") {
		if v, ok := strings.CutPrefix(line, "workspace_id: "); ok {
			ws = strings.TrimSpace(v)
		}
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	// What an older backup, or a crash with synchronous_commit=off, loses: the newest transaction.
	for _, q := range []string{
		`DELETE FROM checkpoints WHERE workspace_id = $1 AND id = $2`,
		`DELETE FROM operations WHERE workspace_id = $1 AND checkpoints LIKE '%' || $2 || '%'`,
		`DELETE FROM ledger WHERE workspace_id = $1 AND seq > (SELECT MAX(seq) - 2 FROM ledger WHERE workspace_id = $1)`,
	} {
		args := []any{ws, lost}
		if !strings.Contains(q, "$2") {
			args = args[:1]
		}
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}

	metadataRefusesBehind(w, "checkpoint", "create", "--note", "would hide the gap")
	metadataRefusesBehind(w, "gc")
	metadataDoctorSeesBehind(w)
	var rb metadataRebuild
	w.mustJSON(&rb, "doctor", "--rebuild")
	if !rb.Rebuilt || rb.Checkpoints != 2 {
		t.Fatalf("doctor --rebuild: %+v; want the 2 checkpoints back", rb)
	}
	if ids := metadataList(w); !slices.Contains(ids, lost) {
		t.Fatalf("checkpoint list %v lacks %s", ids, lost)
	}
	metadataRollsBackTo(w, lost, "f", lostContent)
}

// Finding (db-behind-store-masked, MODE=row): a checkpoint row deleted by hand, the ledger table
// whole, was never reported; gc from that database deletes the checkpoint's content.
func TestMetadataCheckpointRowDeleted(t *testing.T) {
	w := newWorkspace(t, nil)
	w.write("f", "v1")
	w.checkpoint("one")
	lostContent := metadataBlob("row deleted")
	w.write("f", lostContent)
	lost := w.checkpoint("its row is deleted")
	w.write("f", "v3")
	conn, err := sql.Open("sqlite3", w.state("plan.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(`DELETE FROM checkpoints WHERE id = ?`, lost); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()

	metadataRefusesBehind(w, "gc")
	r := w.expect(6, "integrity", "doctor")
	if !strings.Contains(r.stdout, lost) || !strings.Contains(r.stdout, "plan doctor --rebuild") {
		t.Fatalf("doctor does not name the lost checkpoint\n%s", r)
	}
	var rb metadataRebuild
	w.mustJSON(&rb, "doctor", "--rebuild")
	if !rb.Rebuilt || rb.Checkpoints != 2 {
		t.Fatalf("doctor --rebuild: %+v; want the 2 checkpoints back", rb)
	}
	w.must("gc")
	metadataRollsBackTo(w, lost, "f", lostContent)
}
