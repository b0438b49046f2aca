package archive_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// The manifest is written last; when it cannot be (the disk fills up: here the file size limit,
// which fails a write the same way) Stage fails, and what it staged is never publishable as a
// complete archive: the caller discards it and Publish finds nothing.
func TestStageFailsWhenTheManifestCannotBeWritten(t *testing.T) {
	f := newFixture(t)
	paths := map[string]spec{}
	var arts []artifact.Artifact
	for i := range 40 {
		p := fmt.Sprintf("out/file-%02d", i)
		paths[p] = file("small", 0o644)
		arts = append(arts, art(p, tree.Added, "small"))
	}
	items := []port.ArchiveItem{{DecisionID: "gen", Attempt: 1, ResultTree: f.build(t, paths), Artifacts: arts}}

	// Every artifact fits under the limit; the manifest listing forty of them does not.
	testkit.SkipUnderTestLog(t)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 2048, Max: old.Max}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	err := f.arch.Stage(context.Background(), id1, items)
	if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); rerr != nil {
		t.Fatalf("restore the file size limit: %v", rerr)
	}
	if !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("Stage with an unwritable manifest: %v, want EFBIG", err)
	}
	if !exists(f.staging(id1) + "/gen/out/file-39") {
		t.Fatal("the artifacts were not staged: the manifest was not what failed")
	}
	if err := f.arch.Discard(id1); err != nil {
		t.Fatal(err)
	}
	_, err = f.arch.Publish(id1)
	faulttest.Require(t, err, fault.ErrIntegrity, "publish after a failed stage")
}
