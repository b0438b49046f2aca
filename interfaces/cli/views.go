package cli

import (
	"time"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/view"
)

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// newCheckpointView is c's object; short is its short name (CheckpointService.ShortNames).
func newCheckpointView(c *checkpoint.Checkpoint, short string) view.Checkpoint {
	st := c.Stats()
	return view.Checkpoint{
		ID: string(c.ID()), ShortID: short, Type: string(c.Type()), CreatedAt: c.CreatedAt().UTC().Format(time.RFC3339),
		Note: c.Note(), DecisionID: optional(c.DecisionID()), ParentID: optional(string(c.ParentID())),
		Parent: optional(string(c.ParentID())), Safety: c.IsSafety(),
		GitCommit: optional(c.GitCommit()), Files: st.Files, Bytes: st.Bytes, StoredBytes: st.StoredBytes,
		DurationMs: float64(st.Duration.Microseconds()) / 1000, RollbackCount: c.RollbackCount(),
		RootTree: c.Root().String(), Labels: c.Labels(), Pinned: c.Pinned(),
	}
}

func newEntryViews(entries []tree.Entry) []view.Entry {
	out := make([]view.Entry, 0, len(entries))
	for _, e := range entries {
		v := view.Entry{Path: e.Path, Kind: e.Kind.String(), Mode: modeString(e.Mode), Size: e.Size}
		switch e.Kind {
		case tree.KindFile:
			h := e.Hash.String()
			v.SHA256 = &h
		case tree.KindSymlink:
			t := e.Target
			v.Target = &t
		case tree.KindDir:
			v.Size = 0
		}
		out = append(out, v)
	}
	return out
}

func modeString(m uint32) string { return "0" + formatOctal(m) }

func formatOctal(m uint32) string {
	const digits = "01234567"
	var b [12]byte
	i := len(b)
	for {
		i--
		b[i] = digits[m&7]
		m >>= 3
		if m == 0 {
			break
		}
	}
	for len(b)-i < 3 {
		i--
		b[i] = '0'
	}
	return string(b[i:])
}

func newChangeViews(changes []tree.Change) []view.Change {
	out := make([]view.Change, 0, len(changes))
	for _, c := range changes {
		kind := ""
		if c.To != nil {
			kind = c.To.Kind.String()
		} else {
			kind = c.From.Kind.String()
		}
		size := c.Size()
		if kind == "dir" {
			size = 0
		}
		out = append(out, view.Change{Path: c.Path, Change: string(c.Type), Size: size, Kind: kind})
	}
	return out
}

func newRollbackView(r application.RollbackResult, kept []string) view.Rollback {
	v := view.Rollback{
		CheckpointID: string(r.Target.ID()), Added: r.Counts.Added, Modified: r.Counts.Modified,
		Deleted: r.Counts.Deleted, RevertedDecisions: append([]string{}, r.RevertedDecisions...),
		DryRun: r.DryRun, Changes: newChangeViews(r.Changes), Kept: kept, Mode: string(r.Mode),
	}
	if v.Mode == "" {
		v.Mode = string(application.RestoreBoth)
	}
	if r.Backup != nil {
		v.BackupCheckpointID = optional(string(r.Backup.ID()))
	}
	return v
}

type recoverView struct {
	Recovered bool    `json:"recovered"`
	Operation *string `json:"operation"`
	Outcome   *string `json:"outcome"`
	Kind      *string `json:"kind,omitempty"`
	// Recorded is the pre_recover checkpoint holding Unrecorded, the paths changed since the crash.
	Recorded   *string  `json:"recorded_checkpoint_id,omitempty"`
	Unrecorded []string `json:"unrecorded_paths,omitempty"`
}

type initView struct {
	Workspace string `json:"workspace"`
	StateDir  string `json:"state_dir"`
	// HistoryDir is where the history is kept: the state directory in the data directory, or
	// .plan/ itself (Outside false).
	HistoryDir  string `json:"history_dir"`
	Outside     bool   `json:"outside"`
	Created     bool   `json:"created"`
	Reattached  bool   `json:"reattached"`
	WorkspaceID string `json:"workspace_id"`
	Store       string `json:"store"`
	DB          string `json:"db"`
}

type gcView struct {
	BytesReclaimed int64 `json:"bytes_reclaimed"`
	PacksDeleted   int   `json:"packs_deleted"`
	PacksRewritten int   `json:"packs_rewritten"`
	LiveObjects    int   `json:"live_objects"`
	// ObjectsReencoded were stored again so that what only pruned checkpoints held can go.
	ObjectsReencoded int           `json:"objects_reencoded"`
	Shared           *sharedGCView `json:"shared,omitempty"`
	Repack           *repackView   `json:"repack,omitempty"`
}

// repackView is what gc --aggressive adds: the repack of what is live.
type repackView struct {
	Objects      int   `json:"objects"`
	Bundles      int   `json:"bundles"`
	Bundled      int   `json:"bundled"`
	Similar      int   `json:"similar"`
	PacksDeleted int   `json:"packs_deleted"`
	BytesBefore  int64 `json:"bytes_before"`
	BytesAfter   int64 `json:"bytes_after"`
	Kept         bool  `json:"kept"`
}

// sharedGCView is what a gc of a shared store adds: its two phases (see docs/store.md).
type sharedGCView struct {
	GraceSeconds   float64 `json:"grace_seconds"`
	PacksCondemned int     `json:"packs_condemned"`
	PacksKept      int     `json:"packs_kept"`
	MarksPending   int     `json:"marks_pending"`
}

type verifyView struct {
	OK                 bool          `json:"ok"`
	CheckedCheckpoints int           `json:"checked_checkpoints"`
	CheckedObjects     int           `json:"checked_objects"`
	Problems           []problemView `json:"problems"`
	RetriedReads       int           `json:"retried_reads"`
	ReadData           bool          `json:"read_data"`
	// ReadFrom, with ReadData, is where the re-hashed bytes were read: the store itself (a shared
	// store's URL, whose local cache is bypassed, or a local store's directory).
	ReadFrom string `json:"read_from,omitempty"`
	// Healed and Unhealed are set by --repair: objects stored afresh from intact copies, and those
	// that have none.
	Healed   []string `json:"healed,omitempty"`
	Unhealed []string `json:"unhealed,omitempty"`
}

type timingView struct {
	Avg float64 `json:"avg"`
	P95 float64 `json:"p95"`
	Max float64 `json:"max"`
}

type growthView struct {
	Day         string `json:"day"`
	Checkpoints int    `json:"checkpoints"`
	StoredBytes int64  `json:"stored_bytes"`
}

type statsView struct {
	Checkpoints           int          `json:"checkpoints"`
	LogicalBytes          int64        `json:"logical_bytes"`
	StoredBytes           int64        `json:"stored_bytes"`
	Objects               int          `json:"objects"`
	Packs                 int          `json:"packs"`
	DedupRatio            float64      `json:"dedup_ratio"`
	CheckpointMS          timingView   `json:"checkpoint_ms"`
	CheckpointFailures    int          `json:"checkpoint_failures"`
	CheckpointSuccessRate float64      `json:"checkpoint_success_rate"`
	GrowthPerDay          []growthView `json:"growth_per_day"`
	ArchiveBytes          int64        `json:"archive_bytes"`
	// HistoryDir is where the workspace's history is kept; DataDir sums up the data directory.
	HistoryDir string       `json:"history_dir"`
	DataDir    *dataDirView `json:"data_dir"`
	// Store and Cache describe a shared store: its URL, and the local cache of a remote one.
	Store string     `json:"store,omitempty"`
	Cache *cacheView `json:"cache,omitempty"`
	// Budget is the disk budget (store.max_bytes), null when none is configured.
	Budget *budgetView `json:"budget"`
}

// dataDirView is what the per-user data directory keeps (docs/data-dir.md).
type dataDirView struct {
	Path       string `json:"path"`
	Workspaces int    `json:"workspaces"`
	Bytes      int64  `json:"bytes"`
	Gone       int    `json:"gone"`
	GoneBytes  int64  `json:"gone_bytes"`
	// MaxBytes is the data directory's budget (data_max_bytes in Config, the per-user
	// configuration), when one is set.
	MaxBytes int64  `json:"max_bytes,omitempty"`
	Config   string `json:"config,omitempty"`
}

type cacheView struct {
	Hits            int64   `json:"hits"`
	Misses          int64   `json:"misses"`
	HitRatio        float64 `json:"hit_ratio"`
	DownloadedBytes int64   `json:"downloaded_bytes"`
	CachedBytes     int64   `json:"cached_bytes"`
	LimitBytes      int64   `json:"limit_bytes"`
}

type archivePruneView struct {
	Deleted    []string          `json:"deleted"`
	Kept       []string          `json:"kept"`
	Reasons    map[string]string `json:"reasons"`
	BytesFreed int64             `json:"bytes_freed"`
	DryRun     bool              `json:"dry_run"`
}

type findingView struct {
	Check    string `json:"check"`
	OK       bool   `json:"ok"`
	Problem  string `json:"problem,omitempty"`
	Repair   string `json:"repair,omitempty"`
	Repaired bool   `json:"repaired"`
}

type doctorView struct {
	OK       bool          `json:"ok"`
	Findings []findingView `json:"findings"`
}

func newDoctorView(r bootstrap.DoctorReport) doctorView {
	v := doctorView{OK: r.OK, Findings: make([]findingView, 0, len(r.Findings))}
	for _, f := range r.Findings {
		v.Findings = append(v.Findings, findingView{Check: f.Check, OK: f.OK, Problem: f.Problem, Repair: f.Repair, Repaired: f.Repaired})
	}
	return v
}

// rebuildView is doctor --rebuild's output.
type rebuildView struct {
	Rebuilt     bool   `json:"rebuilt"`
	Checkpoints int    `json:"checkpoints"`
	Plans       int    `json:"plans"`
	Decisions   int    `json:"decisions"`
	Corrections int    `json:"corrections"`
	Records     int    `json:"records"`
	KeptAside   string `json:"kept_aside"`
}

func newRebuildView(r bootstrap.RebuildResult) rebuildView {
	return rebuildView{Rebuilt: r.Rebuilt, Checkpoints: r.Checkpoints, Plans: r.Plans, Decisions: r.Decisions,
		Corrections: r.Corrections, Records: r.Records, KeptAside: r.KeptAside}
}
