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
		logs := w.state("logs/plans") + string(filepath.Separator)
		if len(views) != 1 || !strings.HasPrefix(views[0].LogPath, logs) || strings.Contains(views[0].LogPath[len(logs):], "..") {
			t.Errorf("plan %q: log_path %+v, want one under %s holding no ..", name, views, logs)
		}
	}
	// Nothing escaped the logs directory.
	for _, p := range []string{filepath.Join(w.dir, ".plan", "b"), w.state("b"), w.state("logs/b")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("a plan's name made %s, outside logs/plans", p)
		}
	}
}
