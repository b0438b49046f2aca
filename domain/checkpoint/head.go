package checkpoint

// The head of a workspace is the checkpoint its files were last made equal to or recorded as. A
// safety checkpoint (the state a rollback, a correction or recovery was about to discard) is kept
// and named but is never the head: it records what was thrown away, not where the workspace is.

// IsSafety reports whether a checkpoint of type t is a safety checkpoint: pre_rollback,
// pre_correction or pre_recover.
func (t Type) IsSafety() bool {
	return t == PreRollback || t == PreCorrection || t == PreRecover
}

// IsSafety reports whether the checkpoint is a safety checkpoint (see Type.IsSafety).
func (c *Checkpoint) IsSafety() bool { return c.typ.IsSafety() }

// Lineage is what a workspace's history says about where it stands, worked out from the records
// alone (a workspace made before heads were recorded): each checkpoint's parent and the head.
type Lineage struct {
	// Parents maps each checkpoint to its parent ("" for the first): the previous non-safety
	// checkpoint in time order.
	Parents map[ID]ID
	// Head is the workspace's head ("" when it has no non-safety checkpoint).
	Head ID
}

// Derive works out the lineage of checkpoints (oldest first). rolledBackTo returns the target of
// the rollback whose safety checkpoint backup is, when there is one. The head is the target of
// the last rollback when the newest checkpoint is that rollback's safety checkpoint (or, when
// that target is itself a safety checkpoint, as an undone rollback's is, the nearest non-safety
// ancestor of it); else the newest non-safety checkpoint.
func Derive(oldestFirst []*Checkpoint, rolledBackTo func(backup ID) (ID, bool)) Lineage {
	l := Lineage{Parents: make(map[ID]ID, len(oldestFirst))}
	byID := make(map[ID]*Checkpoint, len(oldestFirst))
	var last ID
	for _, c := range oldestFirst {
		byID[c.id] = c
		l.Parents[c.id] = last
		if !c.IsSafety() {
			last = c.id
		}
	}
	l.Head = last
	if len(oldestFirst) == 0 {
		return l
	}
	newest := oldestFirst[len(oldestFirst)-1]
	if !newest.IsSafety() {
		return l
	}
	target, ok := rolledBackTo(newest.id)
	if !ok {
		return l
	}
	// A safety checkpoint's parent is non-safety by construction: one step settles it.
	if t, known := byID[target]; known && t.IsSafety() {
		target = l.Parents[target]
	} else if !known {
		return l // the target was deleted since: the newest non-safety checkpoint stands
	}
	if target != "" {
		l.Head = target
	}
	return l
}
