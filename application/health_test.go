package application

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
)

func TestStoreSummary(t *testing.T) {
	e := newUseCaseEnv(t)
	e.health.usage = port.StoreUsage{Packs: 2, Objects: 10}
	if sum := e.ms.Summary(context.Background(), nil); sum.Problem != "" || sum.Usage.Packs != 2 {
		t.Errorf("no checkpoint: %+v", sum)
	}
	cp := e.typedCheckpoint(t, time.Minute, checkpoint.Manual, nil, false)
	if sum := e.ms.Summary(context.Background(), cp); sum.Problem != "" {
		t.Errorf("healthy: %+v", sum)
	}
	e.health.damaged[cp.Root()] = fault.Integrity("object missing")
	if sum := e.ms.Summary(context.Background(), cp); !strings.Contains(sum.Problem, "object missing") || !strings.Contains(sum.Problem, "plan doctor") {
		t.Errorf("damaged: %+v", sum)
	}
	e.health.damaged[cp.Root()] = fault.Unavailable("timeout")
	if sum := e.ms.Summary(context.Background(), cp); !strings.Contains(sum.Problem, "did not answer") {
		t.Errorf("unavailable: %+v", sum)
	}
}
