package workspace

import (
	"context"
	"testing"
	"time"
)

func TestTrackStateAndLastChange(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "one", 0o644)
	if st := w.sc.TrackState(); st.Tracking {
		t.Fatalf("untracked scanner: %+v", st)
	}
	if _, ok := w.sc.LastChange(); ok {
		t.Fatal("LastChange without tracking")
	}
	stop := w.sc.Track()
	defer stop()
	if _, ok := w.sc.LastChange(); ok {
		t.Fatal("LastChange before the first tracked snapshot")
	}
	if _, err := w.sc.Snapshot(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if lc, ok := w.sc.LastChange(); !ok || !lc.IsZero() {
		t.Fatalf("LastChange with no event yet: %v %v", lc, ok)
	}
	before := time.Now()
	w.write("a", "two", 0o644)
	if lc, ok := w.sc.LastChange(); !ok || lc.Before(before) {
		t.Fatalf("LastChange after a write: %v %v", lc, ok)
	}
	if _, err := w.sc.Snapshot(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if st := w.sc.TrackState(); !st.Tracking || st.Off != "" || st.Walks != 1 || st.Updates != 1 {
		t.Fatalf("state %+v", st)
	}
}

func TestLastChangeWithoutEvents(t *testing.T) {
	w := newTestWS(t)
	w.sc.TrackOff("PLAN_WATCH=0")
	stop := w.sc.Track()
	defer stop()
	if _, err := w.sc.Snapshot(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.sc.LastChange(); ok {
		t.Fatal("LastChange with tracking off")
	}
	if st := w.sc.TrackState(); st.Off != "PLAN_WATCH=0" {
		t.Fatalf("state %+v", st)
	}
}
