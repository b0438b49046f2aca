package workspace

import "time"

// TrackState is what a long-lived tracker (the watch service's) reports about itself.
type TrackState struct {
	// Tracking says a Track is in force; Off says why its snapshots walk ("" while events work).
	Tracking bool
	Off      string
	// Walks and Updates count the snapshots taken by walking the whole workspace and
	// incrementally since tracking started.
	Walks, Updates int
}

// TrackState reports the state of the tracking a Track started (zero when none is).
func (s *Scanner) TrackState() TrackState {
	tr := s.tracking()
	if tr == nil {
		return TrackState{}
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return TrackState{Tracking: true, Off: tr.off, Walks: tr.walks, Updates: tr.updates}
}

// LastChange is when the tracker last saw the workspace change (the newest event read, events
// queued until now included), and whether it can tell: false while nothing is tracked, before
// the first tracked snapshot, and where events are not available. Only the watch service's idle
// and periodic checkpoints use it, to know when work happened; no snapshot relies on it.
func (s *Scanner) LastChange() (time.Time, bool) {
	tr := s.tracking()
	if tr == nil {
		return time.Time{}, false
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	lc, ok := tr.w.(interface{ lastChange() time.Time })
	if tr.w == nil || !ok {
		return time.Time{}, false
	}
	return lc.lastChange(), true
}
