package bootstrap

import (
	"testing"

	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// PLAN_WATCH=0 reaches the adapters through the environment the caller gives (Config.Getenv, a
// cli.Runner's), not the process's: the scanner's tracking is off and the snapshotter walks, and
// without it both follow the workspace as usual.
func TestWalkOnlyFromTheGivenEnvironment(t *testing.T) {
	t.Setenv("PLAN_WATCH", "") // the process says nothing: only the given environment counts
	for _, c := range []struct{ env string }{{"0"}, {""}, {"1"}} {
		l, err := workspace.NewLayout(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		env := c.env
		s := &Setup{Layout: l, getenv: func(k string) string {
			if k == "PLAN_WATCH" {
				return env
			}
			return ""
		}}
		sc := newScanner(s.Layout, nil, s)
		sn := newSnapshotter(sc, s.Layout, nil, s)
		stop := sn.Track()
		st := sc.TrackState()
		stop()
		if off := st.Off == "PLAN_WATCH=0"; off != (c.env == "0") || !st.Tracking {
			t.Errorf("PLAN_WATCH=%q: %+v", c.env, st)
		}
	}
}
