package application

import (
	"context"
	"errors"
	"testing"

	"github.com/planhq/plan/domain/plan"
)

// A tool call's end is recorded with its entry in the operation log, in one transaction; a log
// that cannot be written leaves the call recorded and says why its entry is missing.
func TestAfterToolLogsTheCallWithItsEnd(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	e.ops.oplog = log
	svc := NewAgentService(e.ops)
	ctx := context.Background()
	br, err := svc.BeforeTool(ctx, callOf("toolu_1"))
	if err != nil {
		t.Fatal(err)
	}
	e.setFile("a.txt", "1")
	ar, err := svc.AfterTool(ctx, callOf("toolu_1"), true)
	if err != nil || ar.LogFailed != nil {
		t.Fatalf("after: %+v %v", ar, err)
	}
	if len(log.ops) != 1 {
		t.Fatalf("log: %+v", log.ops)
	}
	op := log.ops[0]
	if op.Kind != "decision" || len(op.Args) != 1 || op.Args[0] != "toolu_1" || op.Plan != "claude-s1" || op.Outcome != "failed" ||
		op.UndoCheckpoint != br.Checkpoint.ID() || len(op.Checkpoints) != 1 || op.Checkpoints[0] != br.Checkpoint.ID() || op.ID == "" {
		t.Errorf("entry: %+v", op)
	}
	if op.FinishedAt.Before(op.StartedAt) {
		t.Errorf("entry ends before it starts: %+v", op)
	}

	boom := errors.New("log gone")
	log.addErr = boom
	if _, err := svc.BeforeTool(ctx, callOf("toolu_2")); err != nil {
		t.Fatal(err)
	}
	ar, err = svc.AfterTool(ctx, callOf("toolu_2"), false)
	if err != nil || !errors.Is(ar.LogFailed, boom) {
		t.Fatalf("after with the log failing: %+v %v", ar, err)
	}
	if d := mustDecision(t, e, "claude-s1", "toolu_2"); d.Status() != plan.Succeeded {
		t.Errorf("the call was not recorded without its log entry: %s", d.Status())
	}

	// Saving fails: the call's end is not recorded, with or without its entry.
	log.addErr = nil
	for _, id := range []string{"toolu_3", "toolu_4"} {
		if _, err := svc.BeforeTool(ctx, callOf(id)); err != nil {
			t.Fatal(err)
		}
	}
	e.plans.saveErr = boom
	if _, err := svc.AfterTool(ctx, callOf("toolu_3"), false); !errors.Is(err, boom) {
		t.Errorf("after, save failing: %v", err)
	}
	log.addErr = errors.New("log gone too")
	if _, err := svc.AfterTool(ctx, callOf("toolu_4"), false); !errors.Is(err, boom) {
		t.Errorf("after, save and log failing: %v", err)
	}
}

// Before a tool call, the checkpoint and the running call commit together: a call that cannot be
// saved fails the hook.
func TestBeforeToolSavesTheCallWithItsCheckpoint(t *testing.T) {
	e := newUseCaseEnv(t)
	svc := NewAgentService(e.ops)
	ctx := context.Background()
	if _, err := svc.BeforeTool(ctx, callOf("toolu_1")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("db gone")
	e.plans.saveErr = boom
	if _, err := svc.BeforeTool(ctx, callOf("toolu_2")); !errors.Is(err, boom) {
		t.Fatalf("before, save failing: %v", err)
	}
	e.plans.saveErr = nil
	d := mustDecision(t, e, "claude-s1", "toolu_1")
	if a, ok := d.Latest(); !ok || a.Status != plan.Running || a.CheckpointID == "" {
		t.Errorf("the first call: %+v", a)
	}
}
