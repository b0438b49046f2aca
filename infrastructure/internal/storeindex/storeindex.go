package storeindex

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/persistence"
	"github.com/planhq/plan/infrastructure/internal/timing"
)

// Descriptor is a shared store's workspaces/<id>.json: where the workspace was made.
type Descriptor struct {
	WorkspaceID string    `json:"workspace_id"`
	Root        string    `json:"root"`
	Host        string    `json:"host"`
	CreatedAt   time.Time `json:"created_at"`
}

// Retirement is a workspace's workspaces/<id>.retired.
type Retirement struct {
	Format      int       `json:"format"`
	WorkspaceID string    `json:"workspace_id"`
	RetiredAt   time.Time `json:"retired_at"`
	Host        string    `json:"host"`
	// Head is the newest record number the workspace had committed when it was retired: the
	// trees of records numbered above it stay live (a command opened before may still commit).
	Head uint64 `json:"head"`
}

// Workspace is one workspace of a shared store, as Read found it.
type Workspace struct {
	ID string
	// Descriptor is nil when the store holds none (it is written after the first record).
	// DescriptorDamaged says it does not parse or names another workspace: it still names this
	// one (a gc must account for it), Descriptor holding only the ID.
	Descriptor        *Descriptor
	DescriptorDamaged bool
	// Retired is nil unless the workspace was retired.
	Retired *Retirement
	// Hole says what is missing from its history ("" when nothing is): no gc may collect then.
	Hole string
	// State is what its committed records replay to (nil when it has none).
	State *persistence.LedgerState
	// Maybe are the trees its pending records name.
	Maybe []tree.Hash
	// Kept are the trees records numbered above its retirement's high-water mark name.
	Kept []tree.Hash
	// FromSummary says the workspace was taken from the summary, none of its files read.
	FromSummary bool

	head     uint64
	headTag  string
	descTag  string
	retTag   string
	pending  bool
	hasNames bool
}

// Live is what a gc keeps for the workspace: every checkpoint's root and every unreverted
// attempt's result, or, for a retired one, its pinned checkpoints' roots and what its records
// after retirement name; and, either way, what its pending records name.
func (w *Workspace) Live() []tree.Hash {
	var out []tree.Hash
	if w.State != nil {
		if w.Retired == nil {
			out = append(out, w.State.Summary().Roots...)
		} else {
			out = append(out, w.State.PinnedRoots()...)
		}
	}
	out = append(out, w.Kept...)
	return append(out, w.Maybe...)
}

// View is a shared store's workspaces, read once.
type View struct {
	Workspaces map[string]*Workspace
	// Summary names the summary read ("" when there was none, or it could not be used).
	Summary string
	// Read counts the workspaces whose files were read (the others came from the summary).
	Read int
}

// Sorted returns the workspaces in ID order.
func (v *View) Sorted() []*Workspace {
	out := make([]*Workspace, 0, len(v.Workspaces))
	for _, w := range v.Workspaces {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b *Workspace) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// listing is what the store's listings say of one workspace.
type listing struct {
	committed, pending []string
	hasDir             bool
	desc, head, ret    *objectstore.FileInfo
}

// Read reads every workspace of the shared store be: from the newest usable summary what its
// entries prove unchanged, and the rest from their files (docs/design.md#storeindex). It only
// reads, needs no lock, and tolerates workspaces writing at the same time.
func Read(be objectstore.Backend) (*View, error) { return read(be, true) }

// ReadForListing is Read for what `plan workspaces` shows: one listing of records/ instead of two.
// A transaction committing during it may be missed (it is listed next time); a gc must use Read.
func ReadForListing(be objectstore.Backend) (*View, error) { return read(be, false) }

func read(be objectstore.Backend, exact bool) (*View, error) {
	end := timing.Span("index.summary")
	prior, priorName := readSummary(be)
	end()
	// Pending first, committed second: a record committed between the two listings is in one.
	end = timing.Span("index.list")
	first, err := objectstore.ListTree(be, "records")
	if err != nil {
		return nil, fmt.Errorf("list the records of the store: %w", err)
	}
	second := first
	if exact {
		if second, err = objectstore.ListTree(be, "records"); err != nil {
			return nil, fmt.Errorf("list the records of the store: %w", err)
		}
	}
	wsFiles, err := objectstore.ListTree(be, "workspaces")
	if err != nil {
		return nil, fmt.Errorf("list the workspaces of the store: %w", err)
	}
	end()
	defer timing.Span("index.workspaces")()
	lists := map[string]*listing{}
	get := func(id string) *listing {
		l, ok := lists[id]
		if !ok {
			l = &listing{}
			lists[id] = l
		}
		return l
	}
	for _, f := range first {
		if id, name, ok := strings.Cut(f.Name, "/pending/"); ok && !strings.Contains(id, "/") {
			if _, isRec := objectstore.ParseRecordName(name); isRec {
				get(id).pending = append(get(id).pending, name)
			}
		}
	}
	for _, f := range second {
		id, rest, ok := strings.Cut(f.Name, "/")
		if !ok {
			continue // a file directly in records/: no workspace's
		}
		l := get(id)
		l.hasDir = true
		if _, isRec := objectstore.ParseRecordName(rest); isRec {
			l.committed = append(l.committed, rest)
		}
	}
	for i := range wsFiles {
		f := &wsFiles[i]
		if strings.Contains(f.Name, "/") {
			continue
		}
		if id, ok := strings.CutSuffix(f.Name, ".json"); ok {
			get(id).desc = f
		} else if id, ok := strings.CutSuffix(f.Name, ".head"); ok {
			get(id).head = f
		} else if id, ok := strings.CutSuffix(f.Name, ".retired"); ok {
			get(id).ret = f
		}
	}
	v := &View{Workspaces: map[string]*Workspace{}}
	if prior != nil {
		v.Summary = priorName
	}
	for id, l := range lists {
		if !l.hasDir && l.desc == nil && len(l.pending) == 0 {
			continue // a mark or a retirement without a workspace: nothing it keeps
		}
		slices.Sort(l.committed)
		var e *entry
		if prior != nil {
			e = prior.Workspaces[id]
		}
		w, err := readWorkspace(be, id, l, e)
		if err != nil {
			return nil, err
		}
		if !w.FromSummary {
			v.Read++
		}
		v.Workspaces[id] = w
	}
	return v, nil
}

// readWorkspace takes workspace id from its summary entry e when the listing l proves it
// unchanged, else from its files.
func readWorkspace(be objectstore.Backend, id string, l *listing, e *entry) (*Workspace, error) {
	w := &Workspace{ID: id, pending: len(l.pending) > 0, hasNames: len(l.committed) > 0}
	recs := objectstore.NewRecords(be, objectstore.WorkspaceRecords(id))
	var err error
	if w.Descriptor, w.DescriptorDamaged, w.descTag, err = readDescriptor(be, id, l.desc, e); err != nil {
		return nil, err
	}
	if w.Retired, w.retTag, err = readRetirement(be, id, l.ret, e); err != nil {
		return nil, err
	}
	if e != nil && e.State != nil && !w.pending && e.State.Names == len(l.committed) && e.State.Covers(l.committed) &&
		sameRetirement(w.Retired, e.Retired) && headUnchanged(recs, l.head, e) {
		w.State, w.Kept, w.head, w.headTag, w.FromSummary = e.State, e.Kept, e.Head, e.HeadTag, true
		return w, nil
	}
	var prior *persistence.LedgerState
	if e != nil {
		prior = e.State
	}
	if l.head != nil {
		w.headTag = l.head.Tag
	}
	if w.head, _, err = recs.Head(); err != nil {
		return nil, fmt.Errorf("read the records of workspace %s: %w", id, err)
	}
	if w.Hole, err = persistence.LedgerHole(recs); err != nil {
		return nil, fmt.Errorf("read the records of workspace %s: %w", id, err)
	}
	if w.Hole != "" {
		return w, nil
	}
	for attempt := 0; ; attempt++ {
		names, err := recs.Committed()
		if err != nil {
			return nil, fmt.Errorf("read the records of workspace %s: %w", id, err)
		}
		w.hasNames = len(names) > 0
		if len(names) > 0 {
			w.State, err = persistence.AdvanceLedger(recs, names, prior)
		}
		if err == nil && w.Retired != nil {
			w.Kept, err = keptAfter(recs, names, w.Retired.Head)
		}
		if err == nil {
			break
		}
		if attempt >= 2 || !persistence.IsVanished(err) {
			return nil, fmt.Errorf("read the records of workspace %s: %w", id, err)
		}
		prior = nil // compacted meanwhile: list again, from the new baseline
	}
	if w.State == nil && w.Descriptor != nil {
		w.Hole = "all of its records are missing"
		return w, nil
	}
	pending, err := recs.Pending()
	if err != nil {
		return nil, fmt.Errorf("read the records of workspace %s: %w", id, err)
	}
	w.pending = len(pending) > 0
	if w.Maybe, err = persistence.PendingTrees(recs, pending); err != nil {
		return nil, fmt.Errorf("read the pending records of workspace %s: %w", id, err)
	}
	return w, nil
}

// keptAfter lists the trees named by the records numbered above head.
func keptAfter(recs *objectstore.Records, names []string, head uint64) ([]tree.Hash, error) {
	var out []tree.Hash
	for _, n := range names {
		if seq, _ := objectstore.ParseRecordName(n); seq <= head {
			continue
		}
		hs, err := persistence.RecordTrees(recs, n)
		if err != nil {
			return nil, err
		}
		out = append(out, hs...)
	}
	return out, nil
}

// sameRetirement says whether two retirements (nil: none) are the same.
func sameRetirement(a, b *Retirement) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Head == b.Head && a.RetiredAt.Equal(b.RetiredAt)
}

// headUnchanged says whether the workspace's high-water mark is the one e recorded: the same ETag
// when the listing gives one, else the same number read now.
func headUnchanged(recs *objectstore.Records, fi *objectstore.FileInfo, e *entry) bool {
	if fi == nil {
		return e.Head == 0
	}
	if fi.Tag != "" && e.HeadTag != "" {
		return fi.Tag == e.HeadTag
	}
	seq, ok, err := recs.Head()
	return err == nil && ok && seq == e.Head
}

func readDescriptor(be objectstore.Backend, id string, fi *objectstore.FileInfo, e *entry) (d *Descriptor, damaged bool, tag string, err error) {
	if fi == nil {
		return nil, false, "", nil
	}
	if e != nil && e.Descriptor != nil && fi.Tag != "" && fi.Tag == e.DescriptorTag {
		return e.Descriptor, e.DescriptorDamaged, fi.Tag, nil
	}
	b, err := be.ReadFile("workspaces/" + id + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, "", nil
	}
	if err != nil {
		return nil, false, "", fmt.Errorf("read the descriptor of workspace %s: %w", id, err)
	}
	d = &Descriptor{}
	if uerr := json.Unmarshal(b, d); uerr != nil || d.WorkspaceID != id {
		// A descriptor that cannot be parsed still names its workspace.
		d, damaged = &Descriptor{WorkspaceID: id}, true
	}
	return d, damaged, fi.Tag, nil
}

func readRetirement(be objectstore.Backend, id string, fi *objectstore.FileInfo, e *entry) (*Retirement, string, error) {
	if fi == nil {
		return nil, "", nil
	}
	if e != nil && e.Retired != nil && fi.Tag != "" && fi.Tag == e.RetiredTag {
		return e.Retired, fi.Tag, nil
	}
	r, err := ReadRetirement(be, id)
	return r, fi.Tag, err
}

// retiredName is where a workspace's retirement is kept.
func retiredName(id string) string { return "workspaces/" + id + ".retired" }

// ReadRetirement returns workspace id's retirement, nil when it was not retired. A marker that
// does not parse is fault.ErrIntegrity: what the workspace keeps cannot be known.
func ReadRetirement(be objectstore.Backend, id string) (*Retirement, error) {
	b, err := be.ReadFile(retiredName(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the retirement of workspace %s: %w", id, err)
	}
	r := &Retirement{}
	if err := json.Unmarshal(b, r); err != nil || r.Format != 1 || r.WorkspaceID != id {
		return nil, fault.Integrity("the retirement marker %s is damaged: what workspace %s keeps cannot be known", be.Location(retiredName(id)), id)
	}
	return r, nil
}

// Retire retires workspace id: it records the newest record the workspace committed, then writes
// the marker. The workspace must exist (a descriptor or committed records: else fault.ErrNotFound).
// already is set when it was retired before (that retirement is returned, nothing written).
func Retire(be objectstore.Backend, id, host string, now time.Time) (r *Retirement, already bool, err error) {
	if r, err := ReadRetirement(be, id); err != nil || r != nil {
		return r, r != nil, err
	}
	recs := objectstore.NewRecords(be, objectstore.WorkspaceRecords(id))
	head, _, err := recs.Head()
	if err != nil {
		return nil, false, err
	}
	names, err := recs.Committed()
	if err != nil {
		return nil, false, err
	}
	if len(names) > 0 {
		last, _ := objectstore.ParseRecordName(names[len(names)-1])
		head = max(head, last)
	} else if _, err := be.ReadFile("workspaces/" + id + ".json"); errors.Is(err, fs.ErrNotExist) {
		return nil, false, fault.NotFound("the store %s holds no workspace %s (see `plan workspaces`)", be.Location(""), id)
	} else if err != nil {
		return nil, false, err
	}
	r = &Retirement{Format: 1, WorkspaceID: id, RetiredAt: now.UTC(), Host: host, Head: head}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, false, err
	}
	if err := be.Create(retiredName(id), b, 0o640); errors.Is(err, fs.ErrExist) {
		// Retired meanwhile by another process: that retirement stands.
		r, err := ReadRetirement(be, id)
		return r, r != nil, err
	} else if err != nil {
		return nil, false, fmt.Errorf("retire workspace %s: %w", id, err)
	}
	return r, false, nil
}

// summaryPrefix names the summaries in gc/.
const summaryPrefix = "summary-"

// summaryFile is what a summary holds.
type summaryFile struct {
	Format     int               `json:"format"`
	Created    time.Time         `json:"created"`
	Workspaces map[string]*entry `json:"workspaces"`
}

// entry is one workspace of a summary.
type entry struct {
	Descriptor        *Descriptor              `json:"descriptor,omitempty"`
	DescriptorDamaged bool                     `json:"descriptor_damaged,omitempty"`
	DescriptorTag     string                   `json:"descriptor_tag,omitempty"`
	Retired           *Retirement              `json:"retired,omitempty"`
	RetiredTag        string                   `json:"retired_tag,omitempty"`
	Head              uint64                   `json:"head"`
	HeadTag           string                   `json:"head_tag,omitempty"`
	State             *persistence.LedgerState `json:"state"`
	Kept              []tree.Hash              `json:"kept,omitempty"`
}

// summaryName parses a summary's name: its time stamp and hash.
func summaryName(name string) (sum string, ok bool) {
	base, ok := strings.CutSuffix(name, ".json")
	rest, ok2 := strings.CutPrefix(base, summaryPrefix)
	stamp, sum, found := strings.Cut(rest, "-")
	if !ok || !ok2 || !found || len(stamp) != 13 || len(sum) != 64 {
		return "", false
	}
	for _, c := range stamp + sum {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	return sum, true
}

// summaries lists the summaries' names, oldest first.
func summaries(be objectstore.Backend) ([]string, error) {
	files, err := be.List("gc")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		if _, ok := summaryName(f.Name); ok && !f.Dir {
			out = append(out, f.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// readSummary returns the newest summary, or nil when there is none or it cannot be used
// (unreadable, damaged, another format): then every workspace is read.
func readSummary(be objectstore.Backend) (*summaryFile, string) {
	names, err := summaries(be)
	if err != nil || len(names) == 0 {
		return nil, ""
	}
	name := names[len(names)-1]
	sum, _ := summaryName(name)
	b, err := be.ReadFile("gc/" + name)
	if err != nil {
		return nil, ""
	}
	if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != sum {
		return nil, ""
	}
	var s summaryFile
	if json.Unmarshal(b, &s) != nil || s.Format != 1 {
		return nil, ""
	}
	return &s, name
}

// WriteSummary writes v as the store's summary, then removes the older ones. Only workspaces
// whose history has no hole are written. It returns the new summary's name.
func WriteSummary(be objectstore.Backend, v *View) (string, error) {
	now, err := be.Now()
	if err != nil {
		return "", err
	}
	s := summaryFile{Format: 1, Created: now.UTC(), Workspaces: map[string]*entry{}}
	for id, w := range v.Workspaces {
		if w.Hole != "" || w.State == nil {
			continue
		}
		s.Workspaces[id] = &entry{Descriptor: w.Descriptor, DescriptorDamaged: w.DescriptorDamaged, DescriptorTag: w.descTag, Retired: w.Retired, RetiredTag: w.retTag,
			Head: w.head, HeadTag: w.headTag, State: w.State, Kept: w.Kept}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	old, err := summaries(be)
	if err != nil {
		return "", fmt.Errorf("list the summaries: %w", err)
	}
	h := sha256.Sum256(b)
	name := fmt.Sprintf("%s%013x-%s.json", summaryPrefix, now.UnixMilli(), hex.EncodeToString(h[:]))
	if err := be.Create("gc/"+name, b, 0o440); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("write the store's summary: %w", err)
	}
	for _, o := range old {
		if o == name {
			continue
		}
		if err := be.Remove("gc/" + o); err != nil {
			return name, fmt.Errorf("remove the older summary %s: %w", o, err)
		}
	}
	return name, nil
}
