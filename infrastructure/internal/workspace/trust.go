package workspace

import (
	"io/fs"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/fsx"
)

// refuseUntrusted is the refusal of the state directory state, which fi describes, when another
// user owns it or may write in it (fsx.Distrust); nil when it is the user's alone. It is a conflict
// (exit 5), as git's "dubious ownership".
func refuseUntrusted(state string, fi fs.FileInfo) error {
	why, remedy := fsx.Distrust(fi)
	if why == "" {
		return nil
	}
	return fault.Conflict("%s %s: plan will not use a workspace whose state another user can write, nor run a "+
		"command it names; %s", state, why, remedy)
}
