package cli

import (
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/planhq/plan/application/port"
)

// progressDelay is how long an operation runs before a bar appears: quick commands print nothing.
const progressDelay = time.Second

// termProgress draws a progress bar on a terminal once an operation has run for progressDelay.
type termProgress struct {
	w io.Writer

	mu    sync.Mutex // guards the fields below; workers report concurrently
	label string
	total int64
	done  int64
	start time.Time
	bar   *progressbar.ProgressBar
}

var _ port.Progress = (*termProgress)(nil)

func (p *termProgress) Start(label string, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label, p.total, p.done, p.start, p.bar = label, total, 0, time.Now(), nil
}

func (p *termProgress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if p.bar == nil {
		if time.Since(p.start) < progressDelay {
			return
		}
		p.bar = progressbar.NewOptions64(p.total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(p.label),
			progressbar.OptionShowBytes(true),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond),
		)
		_ = p.bar.Set64(p.done)
		return
	}
	_ = p.bar.Add64(n)
}

func (p *termProgress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}
