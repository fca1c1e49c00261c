package pipeline

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Stage is one pipeline stage's throughput: the bytes it moved, the time it
// was busy, and its best single sample.
type Stage struct {
	Name  string
	Bytes int64
	Busy  time.Duration
	Best  float64 // bytes per second of the fastest sample
}

// Avg is bytes per second over all samples.
func (s Stage) Avg() float64 {
	if s.Busy <= 0 {
		return 0
	}
	return float64(s.Bytes) / s.Busy.Seconds()
}

// Meter accumulates a Stage from several goroutines; every engine reports
// its stages through one.
type Meter struct {
	mu sync.Mutex
	s  Stage
}

// NewMeter starts an empty stage.
func NewMeter(name string) *Meter { return &Meter{s: Stage{Name: name}} }

// Add records one sample.
func (m *Meter) Add(bytes int64, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s.Bytes += bytes
	m.s.Busy += d
	if d > 0 {
		if r := float64(bytes) / d.Seconds(); r > m.s.Best {
			m.s.Best = r
		}
	}
}

// Reset forgets every sample.
func (m *Meter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s = Stage{Name: m.s.Name}
}

// Snapshot copies the stage's figures.
func (m *Meter) Snapshot() Stage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s
}

// WriteStageTable prints stages as a table of GB/s (10^9 bytes).
func WriteStageTable(w io.Writer, stages []Stage) {
	fmt.Fprintf(w, "%-10s %10s %10s %10s %9s\n", "stage", "GB", "avg GB/s", "best GB/s", "busy s")
	for _, s := range stages {
		fmt.Fprintf(w, "%-10s %10.3f %10.3f %10.3f %9.3f\n", s.Name, float64(s.Bytes)/1e9, s.Avg()/1e9, s.Best/1e9, s.Busy.Seconds())
	}
}
