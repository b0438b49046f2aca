package correction

import (
	"fmt"
	"slices"
	"strings"

	"github.com/planhq/plan/domain/tree"
)

// RevertAction is what a surgical revert does, or would do, to one path the decision changed.
type RevertAction string

// The actions.
const (
	// RevertRestore: the path is as the decision left it; its state before the decision comes back.
	RevertRestore RevertAction = "restore"
	// RevertMerge: the path changed since; the decision's change was taken out line by line, keeping
	// the later changes.
	RevertMerge RevertAction = "merge"
	// RevertKeep: the path is already as it was before the decision (or a directory stays because
	// later work lives under it); nothing to do.
	RevertKeep RevertAction = "keep"
	// RevertConflict: the decision's change cannot be taken out without losing later work.
	RevertConflict RevertAction = "conflict"
)

// RevertPath is the plan for one path.
type RevertPath struct {
	Path   string
	Action RevertAction
	Why    string // for a conflict: why; for a keep: why nothing is done
	// Written is what --conflicts markers writes for a conflict: the path itself (markers in a text
	// file) or PATH.reverted (the pre-state beside it); empty when nothing is written.
	Written string
}

// RevertInput is what planning a surgical revert needs. Entries and changes are in tree.Compare
// order; ReadLive and ReadOld return a file entry's content (live entries from the workspace, the
// others from the store); Diff3 is the line diff the merges use.
type RevertInput struct {
	Decision string
	Changes  []tree.Change // the decision's: its pre_decision tree → its result tree
	Live     []tree.Entry
	ReadLive func(e tree.Entry) ([]byte, error)
	ReadOld  func(e tree.Entry) ([]byte, error)
	Markers  bool
	Pre      []tree.Entry // the pre_decision tree, for the modes of directories brought back
	Diff3    Diff3
}

// RevertPlan is a planned surgical revert: the per-path plan, and the workspace tree to apply.
type RevertPlan struct {
	Paths  []RevertPath
	Target []tree.Entry         // the live tree with the decision's changes taken out
	Blobs  map[tree.Hash][]byte // contents Target names that no tree holds yet (merges, markers)
}

// Conflicts returns the conflicting paths.
func (p RevertPlan) Conflicts() []RevertPath {
	var out []RevertPath
	for _, x := range p.Paths {
		if x.Action == RevertConflict {
			out = append(out, x)
		}
	}
	return out
}

// planner carries one planning pass.
type planner struct {
	in      RevertInput
	target  map[string]tree.Entry
	blobs   map[tree.Hash][]byte
	paths   []*RevertPath
	byPath  map[string]*RevertPath
	under   map[string]int         // directory path → entries of target under it, for hasUnder
	ifEmpty []string               // directories the decision created: removed unless later work lives under them
	set     map[string]*tree.Entry // what the revert put at a path (nil: removed), to undo on a late conflict
	live    map[string]tree.Entry
	preDirs map[string]tree.Entry
}

// PlanRevert decides, path by path, how to take a decision's changes out of the live workspace:
//   - a path as the decision left it (same kind, content, mode, target, or absence) gets its state
//     from before the decision back;
//   - a path already as it was before the decision is left alone;
//   - a regular file changed since is merged line by line (base: the decision's result, ours: the
//     live file, theirs: the file before the decision), and so is a file the decision deleted and
//     later work recreated (base: empty); overlapping changes are a conflict;
//   - a binary or oversized file, a symlink, a kind change, a file deleted since, a file the decision
//     created and later work changed, and a file that would replace a directory holding later work,
//     are conflicts.
//
// With markers, conflicting text files get diff3-style markers and a conflicting file's pre-state is
// written beside it as PATH.reverted; otherwise a conflict leaves the live path as it is (the
// caller refuses the whole revert).
func PlanRevert(in RevertInput) (RevertPlan, error) {
	pl := &planner{
		in: in, target: make(map[string]tree.Entry, len(in.Live)), blobs: map[tree.Hash][]byte{},
		byPath: map[string]*RevertPath{}, set: map[string]*tree.Entry{}, under: map[string]int{},
		live: make(map[string]tree.Entry, len(in.Live)), preDirs: map[string]tree.Entry{},
	}
	for _, e := range in.Live {
		pl.setTarget(e)
		pl.live[e.Path] = e
	}
	for _, e := range in.Pre {
		if e.Kind == tree.KindDir {
			pl.preDirs[e.Path] = e
		}
	}
	for _, ch := range in.Changes {
		if err := pl.decide(ch); err != nil {
			return RevertPlan{}, err
		}
	}
	pl.dropEmptyDirs()
	pl.checkShadowed()
	pl.fillParents()
	out := RevertPlan{Blobs: pl.blobs}
	for _, p := range pl.paths {
		out.Paths = append(out.Paths, *p)
	}
	out.Target = make([]tree.Entry, 0, len(pl.target))
	for _, e := range pl.target {
		out.Target = append(out.Target, e)
	}
	slices.SortFunc(out.Target, func(a, b tree.Entry) int { return tree.Compare(a.Path, b.Path) })
	return out, nil
}

func same(a, b *tree.Entry) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Same(*b)
}

func isDir(e *tree.Entry) bool { return e != nil && e.Kind == tree.KindDir }

func (pl *planner) record(path string, a RevertAction, why string) *RevertPath {
	p := &RevertPath{Path: path, Action: a, Why: why}
	pl.paths = append(pl.paths, p)
	pl.byPath[path] = p
	return p
}

// put sets path to e (nil removes it) in the target and remembers it was the revert's doing.
func (pl *planner) put(path string, e *tree.Entry) {
	if e == nil {
		pl.delTarget(path)
		pl.set[path] = nil
		return
	}
	c := *e
	c.Path = path
	pl.setTarget(c)
	pl.set[path] = &c
}

// setTarget and delTarget are the only writers of target: they keep the counts hasUnder reads, so
// asking whether anything lives under a directory costs a map lookup, not a walk of the workspace.
func (pl *planner) setTarget(e tree.Entry) {
	if _, ok := pl.target[e.Path]; !ok {
		for dir := parentOf(e.Path); dir != ""; dir = parentOf(dir) {
			pl.under[dir]++
		}
	}
	pl.target[e.Path] = e
}

func (pl *planner) delTarget(path string) {
	if _, ok := pl.target[path]; !ok {
		return
	}
	delete(pl.target, path)
	for dir := parentOf(path); dir != ""; dir = parentOf(dir) {
		pl.under[dir]--
	}
}

func (pl *planner) decide(ch tree.Change) error {
	before, result := ch.From, ch.To
	var live *tree.Entry
	if e, ok := pl.live[ch.Path]; ok {
		live = &e
	}
	switch {
	case same(live, result):
		if before == nil && isDir(result) {
			pl.ifEmpty = append(pl.ifEmpty, ch.Path)
		} else {
			pl.put(ch.Path, before)
		}
		pl.record(ch.Path, RevertRestore, "")
		return nil
	case same(live, before):
		pl.record(ch.Path, RevertKeep, "already as before the decision")
		return nil
	}
	// Changed since the decision, and not back to how it was before it.
	switch {
	case isDir(live) && (result == nil || isDir(result)) && (before == nil || isDir(before)):
		// Directories hold no data but their mode: the later mode wins unless only the decision
		// changed it (live as the decision left it: the same(live, result) case above).
		if before == nil {
			pl.ifEmpty = append(pl.ifEmpty, ch.Path)
			pl.record(ch.Path, RevertRestore, "")
		} else {
			pl.record(ch.Path, RevertKeep, "changed again since the decision")
		}
		return nil
	case isDir(live) || isDir(result) || isDir(before):
		pl.conflict(ch.Path, before, "its kind changed since the decision", false)
		return nil
	case live != nil && live.Kind == tree.KindSymlink, result != nil && result.Kind == tree.KindSymlink,
		before != nil && before.Kind == tree.KindSymlink:
		pl.conflict(ch.Path, before, "a symlink changed since the decision", true)
		return nil
	case live == nil:
		pl.conflict(ch.Path, before, "deleted since the decision", true)
		return nil
	case before == nil:
		pl.conflict(ch.Path, nil, "created by the decision and changed since", false)
		return nil
	}
	return pl.mergeFile(ch.Path, before, result, live)
}

// mergeFile takes the decision's change result → before out of the live file (result nil: the
// decision deleted the file and later work recreated it).
func (pl *planner) mergeFile(path string, before, result, live *tree.Entry) error {
	theirs, err := pl.in.ReadOld(*before)
	if err != nil {
		return fmt.Errorf("read %q as it was before the decision: %w", path, err)
	}
	var base []byte
	if result != nil {
		if base, err = pl.in.ReadOld(*result); err != nil {
			return fmt.Errorf("read %q as the decision left it: %w", path, err)
		}
	}
	ours, err := pl.in.ReadLive(*live)
	if err != nil {
		return fmt.Errorf("read %q: %w", path, err)
	}
	if !isText(base) || !isText(ours) || !isText(theirs) {
		pl.conflict(path, before, "binary file changed since the decision", true)
		return nil
	}
	mode := live.Mode
	if result != nil && live.Mode == result.Mode {
		mode = before.Mode
	}
	merged, conflicted := Merge3(pl.in.Diff3, base, ours, theirs, MergeLabels{
		Ours: "live", Base: "after " + pl.in.Decision, Theirs: "before " + pl.in.Decision,
	})
	why := "changed since the decision in overlapping lines"
	if result == nil {
		why = "deleted by the decision and recreated since"
	}
	if conflicted && !pl.in.Markers {
		pl.record(path, RevertConflict, why)
		return nil
	}
	h := tree.Sum(merged)
	pl.blobs[h] = merged
	pl.put(path, &tree.Entry{Kind: tree.KindFile, Mode: mode, Size: int64(len(merged)), Hash: h})
	if conflicted {
		p := pl.record(path, RevertConflict, why)
		p.Written = path
		return nil
	}
	pl.record(path, RevertMerge, "")
	return nil
}

// conflict records a conflict at path, leaving the live path as it is. With markers, besideOK and a
// file or symlink before the decision, that pre-state is written beside it as PATH.reverted.
func (pl *planner) conflict(path string, before *tree.Entry, why string, besideOK bool) {
	p := pl.record(path, RevertConflict, why)
	if !pl.in.Markers || !besideOK || before == nil || isDir(before) {
		return
	}
	p.Written = pl.beside(path, *before)
}

// beside writes e at the first free name of PATH.reverted, PATH.reverted.1, ... and returns it.
func (pl *planner) beside(path string, e tree.Entry) string {
	name := path + ".reverted"
	for i := 1; ; i++ {
		if _, taken := pl.target[name]; !taken && tree.ValidatePath(name) == nil {
			break
		}
		name = fmt.Sprintf("%s.reverted.%d", path, i)
	}
	pl.put(name, &e)
	return name
}

// dropEmptyDirs removes the directories the decision created that nothing lives under any more,
// deepest first; the others stay for the later work under them.
func (pl *planner) dropEmptyDirs() {
	slices.SortFunc(pl.ifEmpty, func(a, b string) int { return tree.Compare(b, a) })
	for _, d := range pl.ifEmpty {
		if pl.hasUnder(d) {
			if p := pl.byPath[d]; p != nil {
				p.Action, p.Why = RevertKeep, "later work lives under it"
			}
			continue
		}
		pl.put(d, nil)
	}
}

func (pl *planner) hasUnder(dir string) bool { return pl.under[dir] > 0 }

// checkShadowed turns into a conflict every path the revert would make a file or symlink while
// later work still lives under it as a directory: the live directory stays.
func (pl *planner) checkShadowed() {
	for path, e := range pl.set {
		if e == nil || e.Kind == tree.KindDir || !pl.hasUnder(path) {
			continue
		}
		if l, ok := pl.live[path]; ok {
			pl.setTarget(l)
		} else {
			pl.delTarget(path)
		}
		delete(pl.set, path)
		if p := pl.byPath[path]; p != nil {
			p.Action, p.Why, p.Written = RevertConflict, "a directory holding later work is there now", ""
			if pl.in.Markers {
				p.Written = pl.beside(path, *e)
			}
		}
	}
}

// fillParents makes every parent of a target path a directory: one the revert brought back takes
// its mode from before the decision. A path whose parent is a file or symlink now (later work
// replaced the directory) is not brought back: a conflict.
func (pl *planner) fillParents() {
	paths := make([]string, 0, len(pl.target))
	for p := range pl.target {
		paths = append(paths, p)
	}
	slices.SortFunc(paths, tree.Compare)
	for _, p := range paths {
		for dir := parentOf(p); dir != ""; dir = parentOf(dir) {
			e, ok := pl.target[dir]
			if !ok {
				d := tree.Entry{Path: dir, Kind: tree.KindDir, Mode: 0o755}
				if old, ok := pl.preDirs[dir]; ok {
					d.Mode = old.Mode
				}
				pl.setTarget(d)
				continue
			}
			if e.Kind == tree.KindDir {
				break
			}
			// A parent that is not a directory: undo what the revert put at p.
			if l, ok := pl.live[p]; ok {
				pl.setTarget(l)
			} else {
				pl.delTarget(p)
			}
			if x := pl.byPath[p]; x != nil {
				x.Action, x.Why, x.Written = RevertConflict, "its directory was replaced since the decision", ""
			}
			break
		}
	}
}

func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}
