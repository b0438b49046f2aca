package persistence

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

type planRow struct {
	WorkspaceID string `gorm:"column:workspace_id;primaryKey"`
	ID          string `gorm:"primaryKey"`
	Name        string
	Source      string
	Checkpoints bool
	Created     int64 `gorm:"column:created_at"`
	Updated     int64 `gorm:"column:updated_at"`
}

func (planRow) TableName() string { return "plans" }

type decisionRow struct {
	WorkspaceID string `gorm:"column:workspace_id;primaryKey"`
	PlanID      string `gorm:"primaryKey"`
	ID          string `gorm:"primaryKey"`
	Position    int
	Name        string
	Run         string
	TimeoutNs   int64
	Env         string
	Skipped     bool
	Labels      string
	Retries     int
	OnFailure   string `gorm:"column:on_failure"`
	Validate    string
}

func (decisionRow) TableName() string { return "decisions" }

type attemptRow struct {
	WorkspaceID  string `gorm:"column:workspace_id;primaryKey"`
	PlanID       string `gorm:"primaryKey"`
	DecisionID   string `gorm:"primaryKey"`
	Number       int    `gorm:"primaryKey"`
	Status       string
	Command      string
	CheckpointID string
	ResultTree   string
	ExitCode     sql.NullInt64
	Started      int64 `gorm:"column:started_at"`
	Finished     int64 `gorm:"column:finished_at"`
	Artifacts    string
	RevertedBy   string
	RevertedFrom string `gorm:"column:reverted_from"`
	LogPath      string
}

func (attemptRow) TableName() string { return "attempts" }

type artifactJSON struct {
	Path   string `json:"path"`
	Change string `json:"change"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Plans is the plan repository. A plan is small (tens of decisions), so Save rewrites the whole
// aggregate in one transaction rather than tracking changes.
type Plans struct{ db *DB }

// NewPlans returns the repository on d.
func NewPlans(d *DB) *Plans { return &Plans{db: d} }

var _ plan.Repository = (*Plans)(nil)

// Current returns the most recently saved plan.
func (r *Plans) Current(ctx context.Context) (*plan.Plan, error) {
	var row planRow
	if err := r.db.scoped(ctx).Order("updated_at DESC, id DESC").Take(&row).Error; err != nil {
		return nil, notFound(err, "no plan has run yet")
	}
	return r.load(ctx, row)
}

// ByName returns the plan called name.
func (r *Plans) ByName(ctx context.Context, name string) (*plan.Plan, error) {
	var row planRow
	if err := r.db.scoped(ctx).Where("name = ?", name).Take(&row).Error; err != nil {
		return nil, notFound(err, "plan %q not found", name)
	}
	return r.load(ctx, row)
}

// List returns every plan, most recently saved first.
func (r *Plans) List(ctx context.Context) ([]*plan.Plan, error) {
	var rows []planRow
	if err := r.db.scoped(ctx).Order("updated_at DESC, id DESC").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list plans: %w", err)
	}
	out := make([]*plan.Plan, 0, len(rows))
	for _, row := range rows {
		p, err := r.load(ctx, row)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (r *Plans) load(ctx context.Context, row planRow) (*plan.Plan, error) {
	var ds []decisionRow
	if err := r.db.scoped(ctx).Where("plan_id = ?", row.ID).Order("position").Find(&ds).Error; err != nil {
		return nil, fmt.Errorf("load decisions of %s: %w", row.Name, err)
	}
	var as []attemptRow
	if err := r.db.scoped(ctx).Where("plan_id = ?", row.ID).Order("decision_id, number").Find(&as).Error; err != nil {
		return nil, fmt.Errorf("load attempts of %s: %w", row.Name, err)
	}
	byDecision := map[string][]*plan.Attempt{}
	for _, a := range as {
		pa, err := a.toDomain()
		if err != nil {
			return nil, err
		}
		byDecision[a.DecisionID] = append(byDecision[a.DecisionID], pa)
	}
	states := make([]plan.DecisionState, 0, len(ds))
	for _, d := range ds {
		env := map[string]string{}
		if err := json.Unmarshal([]byte(d.Env), &env); err != nil {
			return nil, fault.Wrap(fault.ErrIntegrity, err, "the env of decision %s is damaged", d.ID)
		}
		labels, err := parseLabels(d.Labels, "decision "+d.ID)
		if err != nil {
			return nil, err
		}
		if len(labels) == 0 {
			labels = nil
		}
		states = append(states, plan.DecisionState{
			Def: plan.Definition{
				ID: d.ID, Name: d.Name, Run: d.Run, Timeout: time.Duration(d.TimeoutNs), Env: env, Labels: labels,
				Retries: d.Retries, OnFailure: d.OnFailure, Validate: d.Validate,
			},
			Skipped:  d.Skipped,
			Attempts: byDecision[d.ID],
		})
	}
	return plan.Rehydrate(row.ID, row.Name, row.Source, row.Checkpoints, time.Unix(0, row.Created), states), nil
}

func (a attemptRow) toDomain() (*plan.Attempt, error) {
	var arts []artifactJSON
	if err := json.Unmarshal([]byte(a.Artifacts), &arts); err != nil {
		return nil, fault.Wrap(fault.ErrIntegrity, err, "the artifacts of %s attempt %d are damaged", a.DecisionID, a.Number)
	}
	result, err := storedHash(a.ResultTree, "the result tree of %s attempt %d", a.DecisionID, a.Number)
	if err != nil {
		return nil, err
	}
	pa := &plan.Attempt{
		Number: a.Number, Status: plan.Status(a.Status), Command: a.Command, CheckpointID: checkpoint.ID(a.CheckpointID),
		ResultTree: result, StartedAt: time.Unix(0, a.Started).UTC(), RevertedBy: a.RevertedBy,
		RevertedFrom: plan.Status(a.RevertedFrom),
		LogPath:      a.LogPath,
	}
	if a.Finished != 0 {
		pa.FinishedAt = time.Unix(0, a.Finished).UTC()
	}
	if a.ExitCode.Valid {
		c := int(a.ExitCode.Int64)
		pa.ExitCode = &c
	}
	for _, x := range arts {
		pa.Artifacts = append(pa.Artifacts, artifact.Artifact{Path: x.Path, Change: tree.ChangeType(x.Change), Size: x.Size, SHA256: x.SHA256})
	}
	return pa, nil
}

// Save replaces the stored plan with p and makes it current.
func (r *Plans) Save(ctx context.Context, p *plan.Plan) error {
	return r.db.do(ctx, func(ctx context.Context) error {
		u, err := unitOf(ctx)
		if err != nil {
			return err
		}
		db := u.tx
		u.touch("plan-row", p.ID())
		// The rows as they were, so that the record holds only the decisions and attempts this
		// save changes (a long plan is saved after every attempt) and those it removes.
		var oldDecisions []decisionRow
		var oldAttempts []attemptRow
		ws := r.db.workspace
		if err := db.Where("workspace_id = ? AND plan_id = ?", ws, p.ID()).Find(&oldDecisions).Error; err != nil {
			return fmt.Errorf("save plan %s: %w", p.Name(), err)
		}
		if err := db.Where("workspace_id = ? AND plan_id = ?", ws, p.ID()).Find(&oldAttempts).Error; err != nil {
			return fmt.Errorf("save plan %s: %w", p.Name(), err)
		}
		decisionsWere := make(map[string]decisionRow, len(oldDecisions))
		for _, d := range oldDecisions {
			decisionsWere[d.PlanID+"/"+d.ID] = d
		}
		attemptsWere := make(map[string]attemptRow, len(oldAttempts))
		for _, a := range oldAttempts {
			attemptsWere[fmt.Sprintf("%s/%s/%d", a.PlanID, a.DecisionID, a.Number)] = a
		}
		row := planRow{
			WorkspaceID: ws, ID: p.ID(), Name: p.Name(), Source: p.Source(), Checkpoints: p.Checkpoints(),
			Created: p.CreatedAt().UnixNano(), Updated: time.Now().UnixNano(),
		}
		if err := db.Save(&row).Error; err != nil {
			return fmt.Errorf("save plan %s: %w", p.Name(), err)
		}
		if err := db.Where("workspace_id = ? AND plan_id = ?", ws, p.ID()).Delete(&decisionRow{}).Error; err != nil {
			return fmt.Errorf("save plan %s: %w", p.Name(), err)
		}
		for i, d := range p.Decisions() {
			def := d.Definition()
			env, err := json.Marshal(def.Env)
			if err != nil {
				return err
			}
			if def.Env == nil {
				env = []byte("{}")
			}
			dr := decisionRow{
				WorkspaceID: ws, PlanID: p.ID(), ID: d.ID(), Position: i, Name: def.Name, Run: def.Run,
				TimeoutNs: int64(def.Timeout), Env: string(env), Skipped: d.Status() == plan.Skipped, Labels: labelsJSON(def.Labels),
				Retries: def.Retries, OnFailure: def.OnFailure, Validate: def.Validate,
			}
			if err := db.Create(&dr).Error; err != nil {
				return fmt.Errorf("save decision %s: %w", d.ID(), err)
			}
			key := dr.PlanID + "/" + dr.ID
			if was, ok := decisionsWere[key]; !ok || was != dr {
				u.touch("decision", key)
			}
			delete(decisionsWere, key)
			for _, a := range d.Attempts() {
				ar, err := toAttemptRow(p.ID(), d.ID(), a)
				if err != nil {
					return err
				}
				ar.WorkspaceID = ws
				if err := db.Create(&ar).Error; err != nil {
					return fmt.Errorf("save attempt %d of %s: %w", a.Number, d.ID(), err)
				}
				akey := fmt.Sprintf("%s/%s/%d", ar.PlanID, ar.DecisionID, ar.Number)
				if was, ok := attemptsWere[akey]; !ok || was != ar {
					u.touch("attempt", akey)
				}
				delete(attemptsWere, akey)
			}
		}
		// What is left was removed: the record says so (in key order, so the bytes do not depend on
		// map order).
		for _, key := range slices.Sorted(maps.Keys(decisionsWere)) {
			u.touch("decision", key)
		}
		for _, key := range slices.Sorted(maps.Keys(attemptsWere)) {
			u.touch("attempt", key)
		}
		return nil
	})
}

func toAttemptRow(planID, decisionID string, a plan.Attempt) (attemptRow, error) {
	arts := make([]artifactJSON, 0, len(a.Artifacts))
	for _, x := range a.Artifacts {
		arts = append(arts, artifactJSON{Path: x.Path, Change: string(x.Change), Size: x.Size, SHA256: x.SHA256})
	}
	b, err := json.Marshal(arts)
	if err != nil {
		return attemptRow{}, err
	}
	row := attemptRow{
		PlanID: planID, DecisionID: decisionID, Number: a.Number, Status: string(a.Status), Command: a.Command,
		CheckpointID: string(a.CheckpointID), ResultTree: hashText(a.ResultTree), Started: a.StartedAt.UnixNano(),
		Artifacts: string(b), RevertedBy: a.RevertedBy, RevertedFrom: string(a.RevertedFrom), LogPath: a.LogPath,
	}
	if !a.FinishedAt.IsZero() {
		row.Finished = a.FinishedAt.UnixNano()
	}
	if a.ExitCode != nil {
		row.ExitCode = sql.NullInt64{Int64: int64(*a.ExitCode), Valid: true}
	}
	return row, nil
}
