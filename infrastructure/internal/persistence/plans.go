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
	Turns       string
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
	Kind        string
	// CorrectedBy and FileRun are plan.Decision.Corrected's.
	CorrectedBy string `gorm:"column:corrected_by"`
	FileRun     string `gorm:"column:file_run"`
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

// Plans is the plan repository. Save writes what changed since the plan was loaded (plan.Changes):
// the plan's row and the decisions that changed, with their attempts, so a decision of a long plan
// (an agent session of thousands of tool calls) costs the same as one of a short one. A plan whose
// list changed (a new plan, a plan file's new order) is rewritten whole.
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
	return r.assemble(row, ds, as)
}

// assemble builds the plan of row from the decision and attempt rows read.
func (r *Plans) assemble(row planRow, ds []decisionRow, as []attemptRow) (*plan.Plan, error) {
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
				Retries: d.Retries, OnFailure: d.OnFailure, Validate: d.Validate, Kind: plan.Kind(d.Kind),
			},
			Skipped:     d.Skipped,
			Attempts:    byDecision[d.ID],
			CorrectedBy: d.CorrectedBy,
			FileRun:     d.FileRun,
		})
	}
	turns, err := parseTurns(row)
	if err != nil {
		return nil, err
	}
	p := plan.Rehydrate(row.ID, row.Name, row.Source, row.Checkpoints, time.Unix(0, row.Created), states)
	p.SetTurns(turns)
	p.Saved()
	return p, nil
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

// Save stores p and makes it current: all of it when its list of decisions changed or it is not
// stored yet, else its row and the decisions that changed (plan.Changes).
func (r *Plans) Save(ctx context.Context, p *plan.Plan) error {
	err := r.db.do(ctx, func(ctx context.Context) error {
		u, err := unitOf(ctx)
		if err != nil {
			return err
		}
		db := u.tx
		ws := r.db.workspace
		whole, ids := p.Changes()
		var stored int64
		if err := db.Model(&planRow{}).Where("workspace_id = ? AND id = ?", ws, p.ID()).Count(&stored).Error; err != nil {
			return fmt.Errorf("save plan %s: %w", p.Name(), err)
		}
		if stored == 0 && p.Partial() {
			return fault.Conflict("plan %s was loaded with some of its decisions but is not stored: nothing to add them to", p.Name())
		}
		if whole || stored == 0 {
			if p.Partial() {
				return fault.Conflict("plan %s was loaded with some of its decisions: it cannot be rewritten whole", p.Name())
			}
			return r.saveWhole(u, p)
		}
		if err := r.saveRow(u, p); err != nil {
			return err
		}
		for _, id := range ids {
			if err := r.saveDecision(u, p, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		p.Saved()
	}
	return err
}

// saveRow writes the plan's own row (its turns, and updated_at, which makes it current).
func (r *Plans) saveRow(u *unit, p *plan.Plan) error {
	u.touch("plan-row", p.ID())
	turns, err := turnsJSON(p.Turns())
	if err != nil {
		return err
	}
	row := planRow{
		WorkspaceID: r.db.workspace, ID: p.ID(), Name: p.Name(), Source: p.Source(), Checkpoints: p.Checkpoints(),
		Created: p.CreatedAt().UnixNano(), Updated: time.Now().UnixNano(), Turns: turns,
	}
	if err := u.tx.Save(&row).Error; err != nil {
		return fmt.Errorf("save plan %s: %w", p.Name(), err)
	}
	return nil
}

// decisionRowOf is decision d of p as a row at position pos.
func (r *Plans) decisionRowOf(p *plan.Plan, d *plan.Decision, pos int) (decisionRow, error) {
	def := d.Definition()
	env, err := json.Marshal(def.Env)
	if err != nil {
		return decisionRow{}, err
	}
	if def.Env == nil {
		env = []byte("{}")
	}
	by, fileRun, _ := d.Corrected()
	return decisionRow{
		WorkspaceID: r.db.workspace, PlanID: p.ID(), ID: d.ID(), Position: pos, Name: def.Name, Run: def.Run,
		TimeoutNs: int64(def.Timeout), Env: string(env), Skipped: d.Status() == plan.Skipped, Labels: labelsJSON(def.Labels),
		Retries: def.Retries, OnFailure: def.OnFailure, Validate: def.Validate, Kind: string(def.Kind),
		CorrectedBy: by, FileRun: fileRun,
	}, nil
}

// saveDecision upserts decision id of p and its attempts, reading and writing only its rows: a
// new decision goes after the plan's last one.
func (r *Plans) saveDecision(u *unit, p *plan.Plan, id string) error {
	db, ws := u.tx, r.db.workspace
	d, err := p.Decision(id)
	if err != nil {
		return err
	}
	var was []decisionRow
	if err := db.Where("workspace_id = ? AND plan_id = ? AND id = ?", ws, p.ID(), id).Limit(1).Find(&was).Error; err != nil {
		return fmt.Errorf("save decision %s: %w", id, err)
	}
	pos := 0
	if len(was) == 1 {
		pos = was[0].Position
	} else {
		var last sql.NullInt64
		if err := db.Raw(`SELECT MAX(position) FROM decisions WHERE workspace_id = ? AND plan_id = ?`, ws, p.ID()).Scan(&last).Error; err != nil {
			return fmt.Errorf("save decision %s: %w", id, err)
		}
		if last.Valid {
			pos = int(last.Int64) + 1
		}
	}
	dr, err := r.decisionRowOf(p, d, pos)
	if err != nil {
		return err
	}
	key := dr.PlanID + "/" + dr.ID
	if len(was) == 0 || was[0] != dr {
		if err := db.Save(&dr).Error; err != nil {
			return fmt.Errorf("save decision %s: %w", id, err)
		}
		u.touch("decision", key)
	}
	var oldAttempts []attemptRow
	if err := db.Where("workspace_id = ? AND plan_id = ? AND decision_id = ?", ws, p.ID(), id).Find(&oldAttempts).Error; err != nil {
		return fmt.Errorf("save decision %s: %w", id, err)
	}
	attemptsWere := make(map[int]attemptRow, len(oldAttempts))
	for _, a := range oldAttempts {
		attemptsWere[a.Number] = a
	}
	for _, a := range d.Attempts() {
		ar, err := toAttemptRow(p.ID(), id, a)
		if err != nil {
			return err
		}
		ar.WorkspaceID = ws
		if was, ok := attemptsWere[a.Number]; !ok || was != ar {
			if err := db.Save(&ar).Error; err != nil {
				return fmt.Errorf("save attempt %d of %s: %w", a.Number, id, err)
			}
			u.touch("attempt", fmt.Sprintf("%s/%s/%d", ar.PlanID, ar.DecisionID, ar.Number))
		}
	}
	return nil
}

// saveWhole replaces the stored plan with p: its list of decisions changed (or it is new).
func (r *Plans) saveWhole(u *unit, p *plan.Plan) error {
	db := u.tx
	// The rows as they were, so that the record holds only the decisions and attempts this
	// save changes and those it removes.
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
	if err := r.saveRow(u, p); err != nil {
		return err
	}
	if err := db.Where("workspace_id = ? AND plan_id = ?", ws, p.ID()).Delete(&decisionRow{}).Error; err != nil {
		return fmt.Errorf("save plan %s: %w", p.Name(), err)
	}
	for i, d := range p.Decisions() {
		dr, err := r.decisionRowOf(p, d, i)
		if err != nil {
			return err
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

// Partial returns the plan called name with only the decisions ids (those it has) and its turns:
// what an agent's hook needs of a session of any length, read by key.
func (r *Plans) Partial(ctx context.Context, name string, ids []string) (*plan.Plan, error) {
	var row planRow
	if err := r.db.scoped(ctx).Where("name = ?", name).Take(&row).Error; err != nil {
		return nil, notFound(err, "plan %q not found", name)
	}
	var ds []decisionRow
	var as []attemptRow
	if len(ids) > 0 {
		if err := r.db.scoped(ctx).Where("plan_id = ? AND id IN ?", row.ID, ids).Order("position").Find(&ds).Error; err != nil {
			return nil, fmt.Errorf("load decisions of %s: %w", row.Name, err)
		}
		if err := r.db.scoped(ctx).Where("plan_id = ? AND decision_id IN ?", row.ID, ids).Order("decision_id, number").Find(&as).Error; err != nil {
			return nil, fmt.Errorf("load attempts of %s: %w", row.Name, err)
		}
	}
	full, err := r.assemble(row, ds, as)
	if err != nil {
		return nil, err
	}
	states := make([]plan.DecisionState, 0, len(full.Decisions()))
	for _, d := range full.Decisions() {
		attempts := d.Attempts()
		ptrs := make([]*plan.Attempt, len(attempts))
		for i := range attempts {
			ptrs[i] = &attempts[i]
		}
		states = append(states, plan.DecisionState{Def: d.Definition(), Skipped: d.Status() == plan.Skipped, Attempts: ptrs})
	}
	p := plan.RehydratePartial(full.ID(), full.Name(), full.Source(), full.Checkpoints(), full.CreatedAt(), states, full.Turns())
	p.Saved()
	return p, nil
}

// RunningExecuted returns the names of the plans with a running attempt of a decision plan runs
// (not an agent's tool call), read through the attempts' status index.
func (r *Plans) RunningExecuted(ctx context.Context) ([]string, error) {
	var names []string
	err := r.db.gorm.WithContext(ctx).Raw(`SELECT DISTINCT p.name FROM attempts a
		JOIN decisions d ON d.workspace_id = a.workspace_id AND d.plan_id = a.plan_id AND d.id = a.decision_id
		JOIN plans p ON p.workspace_id = a.workspace_id AND p.id = a.plan_id
		WHERE a.workspace_id = ? AND a.status = ? AND d.kind = ? ORDER BY p.name`,
		r.db.workspace, string(plan.Running), string(plan.Executed)).Scan(&names).Error
	if err != nil {
		return nil, fmt.Errorf("find running decisions: %w", err)
	}
	return names, nil
}

type turnJSON struct {
	Number    int    `json:"number"`
	Prompt    string `json:"prompt"`
	Start     string `json:"start"`
	End       string `json:"end,omitempty"`
	StartedAt int64  `json:"started_at"`
	EndedAt   int64  `json:"ended_at,omitempty"`
}

func turnsJSON(ts []plan.Turn) (string, error) {
	out := make([]turnJSON, len(ts))
	for i, t := range ts {
		out[i] = turnJSON{Number: t.Number, Prompt: t.Prompt, Start: string(t.Start), End: string(t.End), StartedAt: t.StartedAt.UnixNano()}
		if !t.EndedAt.IsZero() {
			out[i].EndedAt = t.EndedAt.UnixNano()
		}
	}
	b, err := json.Marshal(out)
	return string(b), err
}

func parseTurns(row planRow) ([]plan.Turn, error) {
	if row.Turns == "" {
		return nil, nil
	}
	var in []turnJSON
	if err := json.Unmarshal([]byte(row.Turns), &in); err != nil {
		return nil, fault.Wrap(fault.ErrIntegrity, err, "the turns of plan %s are damaged", row.Name)
	}
	out := make([]plan.Turn, len(in))
	for i, t := range in {
		out[i] = plan.Turn{Number: t.Number, Prompt: t.Prompt, Start: checkpoint.ID(t.Start), End: checkpoint.ID(t.End), StartedAt: time.Unix(0, t.StartedAt).UTC()}
		if t.EndedAt != 0 {
			out[i].EndedAt = time.Unix(0, t.EndedAt).UTC()
		}
	}
	return out, nil
}
