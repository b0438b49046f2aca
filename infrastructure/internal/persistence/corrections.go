package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

type correctionRow struct {
	WorkspaceID        string `gorm:"column:workspace_id;primaryKey"`
	ID                 string `gorm:"primaryKey"`
	DecisionID         string
	Reason             string
	Command            string
	Scope              string
	SafetyCheckpoint   string
	RollbackCheckpoint string
	ArchiveDir         string
	Status             string
	Reexecuted         string
	Created            int64 `gorm:"column:created_at"`
	Finished           int64 `gorm:"column:finished_at"`
	Kind               string
	Conflicts          string
}

type conflictJSON struct {
	Path    string `json:"path"`
	Why     string `json:"why"`
	Written string `json:"written,omitempty"`
	// Resolved is when `plan resolve` marked it (Unix nanoseconds); absent while unresolved.
	Resolved int64 `json:"resolved_at,omitempty"`
}

func (correctionRow) TableName() string { return "corrections" }

type scopeJSON struct {
	DecisionID   string         `json:"decision_id"`
	Attempt      int            `json:"attempt"`
	CheckpointID string         `json:"checkpoint_id"`
	ResultTree   string         `json:"result_tree"`
	StartedAt    int64          `json:"started_at"`
	Artifacts    []artifactJSON `json:"artifacts"`
}

// Corrections is the correction repository.
type Corrections struct{ db *DB }

// NewCorrections returns the repository on d.
func NewCorrections(d *DB) *Corrections { return &Corrections{db: d} }

var _ correction.Repository = (*Corrections)(nil)

func toCorrectionRow(c *correction.Correction) (correctionRow, error) {
	p := c.Params()
	scope := make([]scopeJSON, 0, len(p.Scope))
	for _, it := range p.Scope {
		arts := make([]artifactJSON, 0, len(it.Artifacts))
		for _, a := range it.Artifacts {
			arts = append(arts, artifactJSON{Path: a.Path, Change: string(a.Change), Size: a.Size, SHA256: a.SHA256})
		}
		scope = append(scope, scopeJSON{
			DecisionID: it.DecisionID, Attempt: it.Attempt, CheckpointID: string(it.CheckpointID),
			ResultTree: hashText(it.ResultTree), StartedAt: it.StartedAt.UnixNano(), Artifacts: arts,
		})
	}
	sb, err := json.Marshal(scope)
	if err != nil {
		return correctionRow{}, err
	}
	rb, err := json.Marshal(append([]string{}, c.Reexecuted()...))
	if err != nil {
		return correctionRow{}, err
	}
	conflicts := make([]conflictJSON, 0, len(p.Conflicts))
	for _, x := range p.Conflicts {
		cj := conflictJSON{Path: x.Path, Why: x.Why, Written: x.Written}
		if !x.ResolvedAt.IsZero() {
			cj.Resolved = x.ResolvedAt.UnixNano()
		}
		conflicts = append(conflicts, cj)
	}
	cb, err := json.Marshal(conflicts)
	if err != nil {
		return correctionRow{}, err
	}
	row := correctionRow{
		ID: p.ID, DecisionID: p.DecisionID, Reason: p.Reason, Command: p.Command, Scope: string(sb),
		SafetyCheckpoint: p.SafetyCheckpointID, RollbackCheckpoint: p.RollbackCheckpointID,
		ArchiveDir: p.ArchiveDir, Status: string(c.Status()), Reexecuted: string(rb),
		Created: p.CreatedAt.UnixNano(), Kind: string(c.Kind()), Conflicts: string(cb),
	}
	if !c.FinishedAt().IsZero() {
		row.Finished = c.FinishedAt().UnixNano()
	}
	return row, nil
}

func (r correctionRow) toDomain() (*correction.Correction, error) {
	var scope []scopeJSON
	if err := json.Unmarshal([]byte(r.Scope), &scope); err != nil {
		return nil, fault.Wrap(fault.ErrIntegrity, err, "correction %s has a damaged scope", r.ID)
	}
	var reexecuted []string
	if err := json.Unmarshal([]byte(r.Reexecuted), &reexecuted); err != nil {
		return nil, fault.Wrap(fault.ErrIntegrity, err, "correction %s has a damaged record", r.ID)
	}
	var conflicts []conflictJSON
	if r.Conflicts != "" {
		if err := json.Unmarshal([]byte(r.Conflicts), &conflicts); err != nil {
			return nil, fault.Wrap(fault.ErrIntegrity, err, "correction %s has damaged conflicts", r.ID)
		}
	}
	items := make([]correction.Item, 0, len(scope))
	for _, s := range scope {
		result, err := storedHash(s.ResultTree, "correction %s: the result tree of %s attempt %d", r.ID, s.DecisionID, s.Attempt)
		if err != nil {
			return nil, err
		}
		it := correction.Item{
			DecisionID: s.DecisionID, Attempt: s.Attempt, CheckpointID: checkpoint.ID(s.CheckpointID),
			ResultTree: result, StartedAt: time.Unix(0, s.StartedAt).UTC(),
		}
		for _, a := range s.Artifacts {
			it.Artifacts = append(it.Artifacts, artifact.Artifact{Path: a.Path, Change: tree.ChangeType(a.Change), Size: a.Size, SHA256: a.SHA256})
		}
		items = append(items, it)
	}
	var finished time.Time
	if r.Finished != 0 {
		finished = time.Unix(0, r.Finished).UTC()
	}
	return correction.Rehydrate(correction.Params{
		ID: r.ID, DecisionID: r.DecisionID, Reason: r.Reason, Command: r.Command, Scope: items,
		SafetyCheckpointID: r.SafetyCheckpoint, RollbackCheckpointID: r.RollbackCheckpoint,
		ArchiveDir: r.ArchiveDir, CreatedAt: time.Unix(0, r.Created).UTC(),
		Kind: correction.Kind(r.Kind), Conflicts: toConflicts(conflicts),
	}, correction.Status(r.Status), reexecuted, finished), nil
}

// Add inserts c.
func (r *Corrections) Add(ctx context.Context, c *correction.Correction) error {
	row, err := toCorrectionRow(c)
	if err != nil {
		return err
	}
	row.WorkspaceID = r.db.workspace
	return r.db.write(ctx, "correction", row.ID, func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return inserted(err, "correction %s", c.ID())
		}
		return nil
	})
}

// Get loads a correction by full ID.
func (r *Corrections) Get(ctx context.Context, id string) (*correction.Correction, error) {
	var row correctionRow
	if err := r.db.scoped(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return nil, notFound(err, "correction %s not found", id)
	}
	return row.toDomain()
}

// Resolve finds one correction by prefix.
func (r *Corrections) Resolve(ctx context.Context, ref string) (*correction.Correction, error) {
	row, err := resolvePrefix[correctionRow](ctx, r.db, "correction", ref, func(c correctionRow) string { return c.ID })
	if err != nil {
		return nil, err
	}
	return row.toDomain()
}

// List returns corrections, newest first.
func (r *Corrections) List(ctx context.Context) ([]*correction.Correction, error) {
	var rows []correctionRow
	if err := r.db.scoped(ctx).Order("created_at DESC, id DESC").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list corrections: %w", err)
	}
	out := make([]*correction.Correction, 0, len(rows))
	for _, row := range rows {
		c, err := row.toDomain()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Update loads a correction, applies fn and saves it, in one transaction.
func (r *Corrections) Update(ctx context.Context, id string, fn func(*correction.Correction) error) error {
	return NewTransactor(r.db).Do(ctx, func(ctx context.Context) error {
		c, err := r.Get(ctx, id)
		if err != nil {
			return err
		}
		if err := fn(c); err != nil {
			return err
		}
		row, err := toCorrectionRow(c)
		if err != nil {
			return err
		}
		row.WorkspaceID = r.db.workspace
		return r.db.write(ctx, "correction", row.ID, func(tx *gorm.DB) error { return tx.Save(&row).Error })
	})
}

func toConflicts(cs []conflictJSON) []correction.Conflict {
	var out []correction.Conflict
	for _, c := range cs {
		x := correction.Conflict{Path: c.Path, Why: c.Why, Written: c.Written}
		if c.Resolved != 0 {
			x.ResolvedAt = time.Unix(0, c.Resolved).UTC()
		}
		out = append(out, x)
	}
	return out
}
