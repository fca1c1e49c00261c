//go:build cuda

package kernels

import (
	"github.com/zspool/zspool/pipeline"
)

// Stage timing, from the events around each step.

// Stages reports H2D, scatter, downsample and levels (pyramids), compress
// (zstd), aggregate and D2H, timed on the GPU with events (compress on the
// host). Levels is the scatter and aggregate of the pyramid's rows.
func (e *Engine) Stages() []pipeline.Stage {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := func(i int) pipeline.Stage { return e.meters[i].Snapshot() }
	out := []pipeline.Stage{st(stageH2D), st(stageScatter)}
	if len(e.levels) > 1 {
		out = append(out, st(stageDownsample), st(stageLevels))
	}
	if e.comp != nil {
		var comp pipeline.Stage
		for _, c := range e.compressors() {
			for _, s := range c.Stages() {
				if s.Name == "compress" {
					comp = pipeline.Stage{Name: s.Name, Bytes: comp.Bytes + s.Bytes, Busy: comp.Busy + s.Busy, Best: max(comp.Best, s.Best)}
				}
			}
		}
		out = append(out, comp)
	}
	if e.gpuZstd {
		out = append(out, st(stageCompress))
	}
	return append(out, st(stageAggregate), st(stageD2H))
}

func (e *Engine) compressors() []*pipeline.Compressor {
	var cs []*pipeline.Compressor
	if e.comp != nil {
		cs = append(cs, e.comp)
	}
	for _, lv := range e.levels {
		if lv != nil && lv.comp != nil {
			cs = append(cs, lv.comp)
		}
	}
	return cs
}

func (e *Engine) closeCompressors() {
	for _, c := range e.compressors() {
		c.Close()
	}
}

// ResetStages clears the stage figures (the bench's warm-up).
func (e *Engine) ResetStages() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, m := range e.meters {
		m.Reset()
	}
}
