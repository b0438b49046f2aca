package application

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/planhq/plan/application/internal/kernel"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/plan"
)

// AgentService records the sessions of AI coding agents, as their hooks report them, in plan's own
// model: a session is a plan (SessionPlanName), each user prompt opens a turn (a turn_start
// checkpoint), each mutating tool call is a decision of kind plan.Outside whose ID is the agent's
// tool-call ID, with a pre_decision checkpoint taken before the tool runs and its outcome and the
// files it changed recorded after it, and the end of a turn is a turn_end checkpoint. Checkpoints
// and decisions carry the labels agent, session, turn and tool. Everything else (status, revert,
// history, undo, diff, clone, retention) works on these plans unchanged.
//
// A hook is on the agent's critical path: each call reads and writes only the session's row, its
// turns and the one tool call it concerns (plan.Repository.Partial), never the whole session.
type AgentService struct {
	ops *Operations
	// The parts of the shared core this service uses, taken from it when it is built.
	guard       *kernel.Guard
	clock       port.Clock
	checkpoints checkpoint.Repository
	plans       plan.Repository
	store       port.TreeStore
	tx          port.Transactor
}

// NewAgentService returns the service.
func NewAgentService(ops *Operations) *AgentService {
	return &AgentService{ops: ops, guard: ops.guard, clock: ops.clock, checkpoints: ops.checkpoints, plans: ops.plans, store: ops.store, tx: ops.tx}
}

// The labels agent records carry.
const (
	LabelAgent   = "agent"
	LabelSession = "session"
	LabelTurn    = "turn"
	LabelTool    = "tool"
)

var (
	agentName = ident.NewPattern("a-z", "a-z0-9-", 32)             // ^[a-z][a-z0-9-]{0,31}$
	sessionID = ident.NewPattern("A-Za-z0-9", "A-Za-z0-9._-", 128) // ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$
)

// sessionSource is the Source of a session's plan: "agent AGENT session ID".
const sessionSource = "agent %s session %s"

// SessionPlanName is the name of the plan that records session of agent: "AGENT-SESSION".
func SessionPlanName(agent, session string) string { return agent + "-" + session }

// SessionOf reads the agent and session a plan records, ok false for a plan that is no session.
func SessionOf(p *plan.Plan) (agent, session string, ok bool) {
	f := strings.Fields(p.Source())
	if len(f) != 4 || f[0] != "agent" || f[2] != "session" {
		return "", "", false
	}
	return f[1], f[3], true
}

// Session identifies an agent session.
type Session struct {
	Agent string
	ID    string
}

func (s Session) validate() error {
	if !agentName.Match(s.Agent) {
		return fault.Invalid("agent name %q: want lower-case letters, digits and '-'", s.Agent)
	}
	if !sessionID.Match(s.ID) {
		return fault.Invalid("session ID %q: want 1 to 128 letters, digits, '.', '_' and '-'", s.ID)
	}
	return nil
}

func (s Session) plan() string { return SessionPlanName(s.Agent, s.ID) }

// ToolCall is one call of an agent's tool, as its hook reports it.
type ToolCall struct {
	Session Session
	// ID is the agent's tool-call ID: the decision's ID.
	ID string
	// Tool is the tool's name (Bash, Edit, write_file, apply_patch…).
	Tool string
	// Summary describes the call in one line (the command, the file edited).
	Summary string
	// Derived says the agent gives its calls no ID (Gemini CLI): ID is then the same for every
	// call of the same tool with the same input, and the session numbers repeats apart (ID, ID-2,
	// ID-3…): BeforeTool takes the first not recorded, AfterTool the last still running.
	Derived bool
}

func (c ToolCall) validate() error {
	if err := c.Session.validate(); err != nil {
		return err
	}
	if err := plan.ValidateDecisionID(c.ID); err != nil {
		return fault.Invalid("tool-call ID %q: want 1 to 128 letters, digits, '_' and '-'", c.ID)
	}
	if strings.TrimSpace(c.Tool) == "" {
		return fault.Invalid("tool call %s names no tool", c.ID)
	}
	return nil
}

// BeforeResult is what BeforeTool recorded.
type BeforeResult struct {
	Plan       string
	Turn       int
	Checkpoint *checkpoint.Checkpoint // the pre_decision checkpoint; the earlier one for a repeat
	Repeated   bool                   // the call was already recorded as running
}

// maxSummary bounds what a decision keeps of its call.
const maxSummary = 200

// BeforeTool checkpoints the workspace before a mutating tool call and records the call as a
// running decision of the session (opening a turn when none is open: the agent's prompt hook may
// not be installed). A call reported twice is recorded once.
func (s *AgentService) BeforeTool(ctx context.Context, call ToolCall) (BeforeResult, error) {
	ctx, release, err := s.enterCall(ctx, &call, true)
	if err != nil {
		return BeforeResult{}, err
	}
	defer release()
	p, err := s.session(ctx, call.Session, call.ID)
	if err != nil {
		return BeforeResult{}, err
	}
	res := BeforeResult{Plan: p.Name()}
	if d, err := p.Decision(call.ID); err == nil {
		if a, ran := d.Latest(); ran && a.Status == plan.Running && d.Kind() == plan.Outside {
			res.Repeated = true
			res.Turn, _ = strconv.Atoi(d.Definition().Labels[LabelTurn])
			if res.Checkpoint, err = s.checkpoints.Get(ctx, a.CheckpointID); err != nil {
				return res, err
			}
			return res, nil
		}
	}
	turn := 1
	if t, ok := p.CurrentTurn(); ok {
		turn = t.Number
		if t.End != "" {
			turn++
		}
	}
	labels := map[string]string{LabelAgent: call.Session.Agent, LabelSession: call.Session.ID, LabelTurn: strconv.Itoa(turn), LabelTool: call.Tool}
	summary := plan.Excerpt(call.Summary, maxSummary)
	if summary == "" {
		summary = call.Tool
	}
	def := plan.Definition{ID: call.ID, Name: call.Tool, Run: summary, Labels: labels}
	// The checkpoint and the running call it is taken for commit as one durable write: the call
	// is recorded only with the state before it, and the hook's one commit is what the tool
	// waits for.
	cp, err := s.ops.create(ctx, CreateRequest{
		Type: checkpoint.PreDecision, DecisionID: call.ID, Labels: labels,
		Note: plan.Excerpt(fmt.Sprintf("before %s tool call %s (%s session %s, turn %d)", call.Tool, call.ID, call.Session.Agent, call.Session.ID, turn), checkpoint.MaxNoteLength),
		with: func(ctx context.Context, cp *checkpoint.Checkpoint) error {
			now := s.clock.Now()
			if t, ok := p.CurrentTurn(); !ok || t.End != "" {
				p.OpenTurn("", cp.ID(), now)
			}
			if _, err := p.RecordOutside(def, cp.ID(), now); err != nil {
				return err
			}
			return s.plans.Save(ctx, p)
		},
	})
	if err != nil {
		return res, fmt.Errorf("checkpoint before tool call %s: %w", call.ID, err)
	}
	res.Turn, res.Checkpoint = turn, cp
	return res, nil
}

// AfterResult is what AfterTool recorded.
type AfterResult struct {
	Plan string
	// CallID is the decision's ID (a derived call's numbered one).
	CallID  string
	Status  plan.Status
	Changed []artifact.Artifact
	// Attempt is the call's attempt as recorded.
	Attempt plan.Attempt
	// LogFailed, when not nil, says why the call is missing from the operation log (`plan
	// history`, `plan undo`): the call itself is recorded.
	LogFailed error
}

// AfterTool records how a tool call ended and what it changed since its pre_decision checkpoint,
// and puts it in the operation log as a decision, so that `plan history` lists it and `plan undo`
// undoes it (back to its pre_decision checkpoint) as a decision of `plan run`: both in one durable
// write. A log that cannot be written leaves the call recorded without its entry (LogFailed).
// A call BeforeTool never recorded (its hook failed or was not installed) is fault.ErrNotFound.
func (s *AgentService) AfterTool(ctx context.Context, call ToolCall, failed bool) (AfterResult, error) {
	ended := s.clock.Now() // the tool's end, as near as the hook can tell
	ctx, release, err := s.enterCall(ctx, &call, false)
	if err != nil {
		return AfterResult{}, err
	}
	defer release()
	p, err := s.plans.Partial(ctx, call.Session.plan(), []string{call.ID})
	if errors.Is(err, fault.ErrNotFound) {
		return AfterResult{}, fault.NotFound("no %s session %s is recorded: tool call %s was not checkpointed before it ran", call.Session.Agent, call.Session.ID, call.ID)
	}
	if err != nil {
		return AfterResult{}, err
	}
	d, err := p.Decision(call.ID)
	if err != nil {
		return AfterResult{}, fault.NotFound("tool call %s of %s session %s was not checkpointed before it ran", call.ID, call.Session.Agent, call.Session.ID)
	}
	a, _ := d.Latest()
	res := AfterResult{Plan: p.Name(), Status: plan.Succeeded}
	if failed {
		res.Status = plan.Failed
	}
	out := plan.Outcome{Status: res.Status}
	pre, err := s.checkpoints.Get(ctx, a.CheckpointID)
	if err != nil {
		return res, fmt.Errorf("the checkpoint before tool call %s: %w", call.ID, err)
	}
	if out.ResultTree, out.Artifacts, err = s.ops.changesSince(ctx, pre); err != nil {
		return res, fmt.Errorf("record what tool call %s changed: %w", call.ID, err)
	}
	if err := p.FinishOutside(call.ID, out, s.clock.Now()); err != nil {
		return res, err
	}
	res.Changed, res.CallID = out.Artifacts, call.ID
	res.Attempt, _ = d.Latest()
	if res.LogFailed, err = s.saveLogged(ctx, p, res, ended); err != nil {
		return res, err
	}
	return res, nil
}

// saveLogged saves p, whose tool call res ended at ended, with the call's entry in the operation
// log, in one transaction. When the entry cannot be written (the log first, so that p is saved by
// neither), p is saved alone and the log's error returned as logErr.
func (s *AgentService) saveLogged(ctx context.Context, p *plan.Plan, res AfterResult, ended time.Time) (logErr, err error) {
	if s.ops.oplog == nil {
		return nil, s.plans.Save(ctx, p)
	}
	outcome := string(res.Status)
	if res.Status == plan.Succeeded {
		outcome = OutcomeOK
	}
	cp := res.Attempt.CheckpointID
	cps := []checkpoint.ID{}
	if cp != "" {
		cps = append(cps, cp)
	}
	entry := s.ops.stamp(port.LoggedOperation{
		Kind: "decision", Args: []string{res.CallID}, Plan: res.Plan, StartedAt: res.Attempt.StartedAt, FinishedAt: ended,
		Outcome: outcome, Checkpoints: cps, UndoCheckpoint: cp,
	})
	err = s.tx.Do(ctx, func(ctx context.Context) error {
		if err := s.ops.oplog.Add(ctx, entry); err != nil {
			return &foldError{err}
		}
		return s.plans.Save(ctx, p)
	})
	if fe := (*foldError)(nil); errors.As(err, &fe) {
		return fe.err, s.plans.Save(ctx, p)
	}
	return nil, err
}

// derivedBatch is how many numbered IDs of a derived call one read looks at.
const derivedBatch = 32

// derivedCall numbers a derived call apart from its repeats: before the call, the first of base,
// base-2, base-3… that is not recorded or still runs; after it, the last of them that runs (base
// when none does: AfterTool then says it was not checkpointed).
// enterCall checks call, takes the workspace lock for it and, for an agent that gives its tool
// calls no ID, names the call (before: a new one; after: the one its before named). When err is
// nil, release MUST be called once.
func (s *AgentService) enterCall(ctx context.Context, call *ToolCall, before bool) (context.Context, func(), error) {
	if err := call.validate(); err != nil {
		return ctx, nil, err
	}
	ctx, release, err := s.guard.Enter(ctx, "hook")
	if err != nil {
		return ctx, nil, err
	}
	if call.Derived {
		if call.ID, err = s.derivedCall(ctx, call.Session, call.ID, before); err != nil {
			release()
			return ctx, nil, err
		}
	}
	return ctx, release, nil
}

func (s *AgentService) derivedCall(ctx context.Context, sess Session, base string, before bool) (string, error) {
	last := base
	for from := 1; ; from += derivedBatch {
		ids := make([]string, derivedBatch)
		for i := range ids {
			ids[i] = derivedName(base, from+i)
		}
		p, err := s.plans.Partial(ctx, sess.plan(), ids)
		if errors.Is(err, fault.ErrNotFound) {
			return base, nil
		}
		if err != nil {
			return "", err
		}
		for _, id := range ids {
			d, err := p.Decision(id)
			if err != nil { // the first number not recorded
				if before {
					return id, nil
				}
				return last, nil
			}
			if d.Status() == plan.Running {
				if before {
					return id, nil
				}
				last = id
			}
		}
	}
}

func derivedName(base string, n int) string {
	if n == 1 {
		return base
	}
	return base + "-" + strconv.Itoa(n)
}

// TurnResult is what Prompt or EndTurn recorded.
type TurnResult struct {
	Plan       string
	Turn       int
	Checkpoint *checkpoint.Checkpoint // nil when EndTurn found no open turn
	// Interrupted lists the tool calls the turn ended with still running (their agent never
	// reported their end): they are recorded interrupted, with what they changed.
	Interrupted []string
}

// Prompt opens the session's next turn: a turn_start checkpoint of the workspace as the user's
// prompt arrives. An open turn is closed first, at the same checkpoint.
func (s *AgentService) Prompt(ctx context.Context, sess Session, prompt string) (TurnResult, error) {
	if err := sess.validate(); err != nil {
		return TurnResult{}, err
	}
	ctx, release, err := s.guard.Enter(ctx, "hook")
	if err != nil {
		return TurnResult{}, err
	}
	defer release()
	p, err := s.session(ctx, sess)
	if err != nil {
		return TurnResult{}, err
	}
	n := len(p.Turns()) + 1
	cp, err := s.ops.create(ctx, CreateRequest{
		Type: checkpoint.TurnStart, Labels: map[string]string{LabelAgent: sess.Agent, LabelSession: sess.ID, LabelTurn: strconv.Itoa(n)},
		Note: plan.Excerpt(fmt.Sprintf("turn %d of %s session %s: %s", n, sess.Agent, sess.ID, prompt), checkpoint.MaxNoteLength),
	})
	if err != nil {
		return TurnResult{}, fmt.Errorf("checkpoint at the start of turn %d: %w", n, err)
	}
	t := p.OpenTurn(prompt, cp.ID(), s.clock.Now())
	if err := s.plans.Save(ctx, p); err != nil {
		return TurnResult{}, err
	}
	return TurnResult{Plan: p.Name(), Turn: t.Number, Checkpoint: cp}, nil
}

// EndTurn closes the session's open turn with a turn_end checkpoint (the agent stopped, or the
// session ended). Tool calls still running are recorded interrupted. With no open turn and none
// running it records nothing; a session never recorded is fault.ErrNotFound.
func (s *AgentService) EndTurn(ctx context.Context, sess Session) (TurnResult, error) {
	if err := sess.validate(); err != nil {
		return TurnResult{}, err
	}
	ctx, release, err := s.guard.Enter(ctx, "hook")
	if err != nil {
		return TurnResult{}, err
	}
	defer release()
	// The whole session: its running calls are found by status. A turn's end is once per prompt,
	// not once per tool call.
	p, err := s.plans.ByName(ctx, sess.plan())
	if errors.Is(err, fault.ErrNotFound) {
		return TurnResult{}, fault.NotFound("no %s session %s is recorded", sess.Agent, sess.ID)
	}
	if err != nil {
		return TurnResult{}, err
	}
	res := TurnResult{Plan: p.Name()}
	t, open := p.CurrentTurn()
	open = open && t.End == ""
	running := p.RunningOutside()
	if !open && len(running) == 0 {
		return res, nil
	}
	n := t.Number
	if !open {
		n = t.Number + 1
	}
	cp, err := s.ops.create(ctx, CreateRequest{
		Type: checkpoint.TurnEnd, Labels: map[string]string{LabelAgent: sess.Agent, LabelSession: sess.ID, LabelTurn: strconv.Itoa(n)},
		Note: fmt.Sprintf("end of turn %d of %s session %s", n, sess.Agent, sess.ID),
	})
	if err != nil {
		return res, fmt.Errorf("checkpoint at the end of turn %d: %w", n, err)
	}
	now := s.clock.Now()
	for _, d := range running {
		a, _ := d.Latest()
		out := plan.Outcome{Status: plan.Interrupted, ResultTree: cp.Root()}
		if pre, err := s.checkpoints.Get(ctx, a.CheckpointID); err == nil {
			changes, err := s.store.DiffTrees(pre.Root(), cp.Root())
			if err != nil {
				return res, fmt.Errorf("record what tool call %s changed: %w", d.ID(), err)
			}
			out.Artifacts = artifact.FromChanges(changes)
		}
		if err := p.FinishOutside(d.ID(), out, now); err != nil {
			return res, err
		}
		res.Interrupted = append(res.Interrupted, d.ID())
	}
	if open {
		p.CloseTurn(cp.ID(), now)
	}
	if err := s.plans.Save(ctx, p); err != nil {
		return res, err
	}
	res.Turn, res.Checkpoint = n, cp
	return res, nil
}

// session loads the session's plan with decisions ids, starting it when it does not exist yet.
func (s *AgentService) session(ctx context.Context, sess Session, ids ...string) (*plan.Plan, error) {
	p, err := s.plans.Partial(ctx, sess.plan(), ids)
	if err == nil {
		if a, id, ok := SessionOf(p); !ok || a != sess.Agent || id != sess.ID {
			return nil, fault.Conflict("plan %q exists and is not the record of %s session %s", p.Name(), sess.Agent, sess.ID)
		}
		return p, nil
	}
	if !errors.Is(err, fault.ErrNotFound) {
		return nil, err
	}
	now := s.clock.Now()
	p, err = plan.New(ident.New(now), sess.plan(), fmt.Sprintf(sessionSource, sess.Agent, sess.ID), true, now)
	if err != nil {
		return nil, err
	}
	if err := s.plans.Save(ctx, p); err != nil {
		return nil, err
	}
	return s.plans.Partial(ctx, sess.plan(), ids)
}

// SessionView is one recorded agent session, for `plan sessions`.
type SessionView struct {
	Plan      string
	Agent     string
	ID        string
	CreatedAt time.Time
	Turns     []TurnView
}

// TurnView is one turn and its tool calls.
type TurnView struct {
	plan.Turn
	Calls []CallView
}

// CallView is one tool call.
type CallView struct {
	ID         string
	Tool       string
	Summary    string
	Status     plan.Status
	Checkpoint checkpoint.ID
	StartedAt  time.Time
	FinishedAt time.Time
	Changed    []artifact.Artifact
}

// Sessions lists the recorded agent sessions, the most recently active first, with their turns
// and tool calls. session, when not "", picks one (its plan name or its session ID).
func (s *AgentService) Sessions(ctx context.Context, session string) ([]SessionView, error) {
	ps, err := s.plans.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []SessionView
	for _, p := range ps {
		agent, id, ok := SessionOf(p)
		if !ok || (session != "" && session != id && session != p.Name()) {
			continue
		}
		out = append(out, viewSession(p, agent, id))
	}
	if session != "" && len(out) == 0 {
		return nil, fault.NotFound("no agent session %q is recorded (`plan sessions` lists them)", session)
	}
	if session != "" && len(out) > 1 {
		names := make([]string, len(out))
		for i, v := range out {
			names[i] = v.Plan
		}
		return nil, fault.Invalid("session %q is ambiguous: it names %s; give the plan name", session, strings.Join(names, " and "))
	}
	return out, nil
}

func viewSession(p *plan.Plan, agent, id string) SessionView {
	v := SessionView{Plan: p.Name(), Agent: agent, ID: id, CreatedAt: p.CreatedAt()}
	turns := p.Turns()
	byTurn := map[int][]CallView{}
	for _, d := range p.Decisions() {
		a, ran := d.Latest()
		if !ran {
			continue
		}
		n, _ := strconv.Atoi(d.Definition().Labels[LabelTurn])
		byTurn[n] = append(byTurn[n], CallView{
			ID: d.ID(), Tool: d.Definition().Name, Summary: a.Command, Status: a.Status, Checkpoint: a.CheckpointID,
			StartedAt: a.StartedAt, FinishedAt: a.FinishedAt, Changed: a.Artifacts,
		})
	}
	for _, t := range turns {
		v.Turns = append(v.Turns, TurnView{Turn: t, Calls: byTurn[t.Number]})
		delete(byTurn, t.Number)
	}
	// Calls of no recorded turn (a plan exec'd into the session): one turn 0 holds them.
	if rest := byTurn[0]; len(rest) > 0 {
		v.Turns = slices.Insert(v.Turns, 0, TurnView{Calls: rest})
	}
	return v
}

// RewindTarget is the checkpoint `plan rewind` restores: the state before turn n of the session
// (its turn_start checkpoint) or before tool call id (its pre_decision checkpoint). Exactly one of
// n (> 0) and id is given.
func (s *AgentService) RewindTarget(ctx context.Context, session string, n int, id string) (checkpoint.ID, SessionView, error) {
	if (n > 0) == (id != "") {
		return "", SessionView{}, fault.Invalid("rewind to a turn (--turn N) or to a tool call (--tool-call ID), one of them")
	}
	if n < 0 {
		return "", SessionView{}, fault.Invalid("--turn must be 1 or more, not %d", n)
	}
	vs, err := s.Sessions(ctx, session)
	if err != nil {
		return "", SessionView{}, err
	}
	v := vs[0]
	for _, t := range v.Turns {
		if n > 0 && t.Number == n {
			return t.Start, v, nil
		}
		for _, c := range t.Calls {
			if id != "" && c.ID == id {
				if c.Checkpoint == "" {
					return "", v, fault.NotFound("tool call %s has no checkpoint before it", id)
				}
				return c.Checkpoint, v, nil
			}
		}
	}
	if n > 0 {
		return "", v, fault.NotFound("session %s has %d turns, not a turn %d", v.Plan, len(v.Turns), n)
	}
	return "", v, fault.NotFound("session %s has no tool call %q (`plan sessions %s` lists them)", v.Plan, id, v.Plan)
}
