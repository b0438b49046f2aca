package hostile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each plan keeps its decisions' recorded output: two plans with a decision of the same ID, and an
// ad-hoc `plan exec --id` of that ID (in plan adhoc), never write the same log, so `plan log ID --plan NAME` prints
// that plan's output whatever ran since. Finding: every plan wrote .plan/logs/<ID>.<attempt>.log,
// so running plan beta replaced plan alpha's recorded output of build, and `plan log build --plan
// alpha` printed beta's output as alpha's.
func TestDecisionLogsAreEachPlansOwn(t *testing.T) {
	w := newWorkspace(t, []string{"PLAN_WATCH=0"})
	files := filepath.Dir(w.dir)
	names := map[string]string{"alpha": "OUTPUT-OF-ALPHA", "beta": "OUTPUT-OF-BETA", "../b/.. c": "OUTPUT-OF-ODD"}
	i := 0
	for name, out := range names {
		i++
		f := filepath.Join(files, "p"+string(rune('0'+i))+".yaml")
		yaml := "name: \"" + name + "\"\ndecisions:\n  - id: build\n    run: echo " + out + "\n"
		if err := os.WriteFile(f, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		w.must("run", f)
	}
	w.must("exec", "--plan", "adhoc", "--id", "build", "--", "echo", "OUTPUT-OF-EXEC")
	names["adhoc"] = "OUTPUT-OF-EXEC"
	for name, out := range names {
		if got := w.must("log", "build", "--plan", name); got != out+"\n" {
			t.Errorf("plan log build --plan %q printed %q, want %q", name, got, out+"\n")
		}
		var views []struct {
			LogPath string `json:"log_path"`
		}
		w.mustJSON(&views, "log", "build", "--plan", name)
		if len(views) != 1 || !strings.HasPrefix(views[0].LogPath, ".plan/logs/plans/") || strings.Contains(views[0].LogPath[len(".plan/logs/plans/"):], "..") {
			t.Errorf("plan %q: log_path %+v, want one under .plan/logs/plans/ holding no ..", name, views)
		}
	}
	// Nothing escaped the logs directory.
	if _, err := os.Lstat(filepath.Join(w.dir, ".plan", "b")); err == nil {
		t.Error("a plan's name made a directory outside .plan/logs")
	}
}
