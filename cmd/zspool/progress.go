package main

import (
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"go.uber.org/zap"
)

// progress shows how far a long operation is: a bar with bytes, rate and
// ETA on a terminal, a log line every few seconds otherwise (journald and
// CI logs want lines, not carriage returns).
type progress struct {
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	log   *zap.Logger
	what  string
	total int64
	start time.Time
	last  time.Time
}

const progressLogEvery = 5 * time.Second

func newProgress(w io.Writer, log *zap.Logger, what string, total int64, quiet bool) *progress {
	p := &progress{log: log, what: what, total: total, start: time.Now()}
	p.last = p.start
	if quiet {
		p.log = nil
		return p
	}
	if isTerminal(w) {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(what),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

// Set records that done bytes of total are processed.
func (p *progress) Set(done int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Set64(done)
		return
	}
	now := time.Now()
	if p.log == nil || now.Sub(p.last) < progressLogEvery {
		return
	}
	p.last = now
	el := now.Sub(p.start).Seconds()
	rate := float64(done) / el
	eta := time.Duration(float64(p.total-done)/rate) * time.Second
	p.log.Info(p.what,
		zap.String("done", gib(done)), zap.String("total", gib(p.total)),
		zap.String("percent", pct(done, p.total)), zap.String("rate", gib(int64(rate))+"/s"),
		zap.Duration("eta", eta.Round(time.Second)))
}

// Done clears the bar.
func (p *progress) Done() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
