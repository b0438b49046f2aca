package objectstore

import (
	"fmt"
	"slices"
	"strings"

	"github.com/planhq/plan/domain/fault"
)

// storeDirs are the top-level directories a shared store holds (docs/format.md#object-store-layout):
// nothing else is ever written there.
var storeDirs = []string{"packs", "records", "workspaces", marksDir, damagedDir, "tmp"}

// CheckRoot refuses (fault.ErrInvalid) a shared store's root that is neither empty nor a plan
// store: anything at its top level other than plan's directories, or anything in packs/ that is
// not named as a pack or an idx. A new workspace checks it before writing anything there, so that
// plan never takes another product's files for its own (a gc would weigh them as packs).
func CheckRoot(be Backend) error {
	var foreign []string
	top, err := be.List("")
	if err != nil {
		return fmt.Errorf("look at the store %s: %w", be.Location(""), err)
	}
	for _, fi := range top {
		if !fi.Dir || !slices.Contains(storeDirs, fi.Name) {
			foreign = append(foreign, fi.Name)
		}
	}
	packs, err := be.List("packs")
	if err != nil {
		return fmt.Errorf("look at the store %s: %w", be.Location(""), err)
	}
	for _, fi := range packs {
		id, ext, ok := strings.Cut(fi.Name, ".")
		if fi.Dir || !ok || !validPackID(id) || (ext != "pack" && ext != "idx") {
			foreign = append(foreign, "packs/"+fi.Name)
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	slices.Sort(foreign)
	shown := foreign[:min(len(foreign), 5)]
	more := ""
	if len(foreign) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(foreign)-len(shown))
	}
	return fault.Invalid("%s is neither empty nor a plan store (it holds %s%s, which plan never writes): choose an empty bucket, prefix or directory, or the one of an existing plan store; nothing was written",
		be.Location(""), strings.Join(shown, ", "), more)
}
