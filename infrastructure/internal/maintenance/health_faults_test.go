package maintenance_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// ScanStore reports every damaged pack and every damaged record by name, so `plan verify
// --read-data` cannot call a store with flipped bytes healthy.
func TestScanStoreNamesDamagedPacksAndRecords(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	name, _ := damageRecord(t, l)
	packs := packFiles(t, l, "pack")
	for _, p := range packs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x40
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := objectstore.Open(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	recs, err := objectstore.OpenRecords(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	problems, err := maintenance.NewHealth(s, recs).ScanStore()
	if err != nil {
		t.Fatal(err)
	}
	var packProblems, recordProblems int
	for _, p := range problems {
		switch {
		case strings.HasPrefix(p.Path, "pack "):
			packProblems++
		case strings.HasPrefix(p.Path, "record ") && strings.Contains(p.Path, name):
			recordProblems++
		default:
			t.Errorf("unexpected problem %+v", p)
		}
	}
	if packProblems == 0 || recordProblems != 1 {
		t.Fatalf("%d pack problems, %d record problems: %+v", packProblems, recordProblems, problems)
	}
	// Without a record directory the packs are still scanned.
	if p, err := maintenance.NewHealth(s, nil).ScanStore(); err != nil || len(p) != packProblems {
		t.Fatalf("without records: %+v, %v", p, err)
	}
}

// WrittenPerDay skips a packs directory that is not there, but a packs path it cannot read is an
// error, never a day with nothing written.
func TestWrittenPerDayFaults(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	s, err := objectstore.Open(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	recs, err := objectstore.OpenRecords(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	packs := filepath.Join(l.Objects(), "packs")
	if err := os.RemoveAll(packs); err != nil {
		t.Fatal(err)
	}
	var want int64
	names, _ := recs.Committed()
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(recs.Dir(), n))
		if err != nil {
			t.Fatal(err)
		}
		want += fi.Size()
	}
	got, err := maintenance.NewHealth(s, recs).WrittenPerDay()
	var sum int64
	for _, n := range got {
		sum += n
	}
	if err != nil || sum != want || want == 0 {
		t.Fatalf("without packs: %v, %v; want %d bytes of records", got, err, want)
	}
	if err := os.WriteFile(packs, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := maintenance.NewHealth(s, recs).WrittenPerDay(); err == nil {
		t.Fatalf("an unreadable packs path: %v", got)
	}
}
