// Package pyramid is the bookkeeping of the GPU engine's pyramid levels:
// which reductions, frame copies and chunk-row emissions each epoch (and
// the end of data) calls for, so that the GPU, working on dense per-level
// frame buffers, produces exactly the CPU engine's rows. It is plain Go and
// knows nothing of CUDA: the engine runs its operations on the GPU, and
// the host simulation (kernels/internal/hostsim) runs the same operations
// on the CPU against the CPU engine.
//
// The model, per level l ≥ 1: a row buffer of dense level-l frames (the
// partial chunk row carried over, then the frames this step adds) and, for
// a z-stack (dim 0 downsampled), one pending frame of level l−1 waiting
// for its pair. Each step first reduces, level by level from the top, the
// frames the level above added in this step (level 0's: the epoch), then
// emits every level's completed rows and moves what is left of a partial
// row to the buffer's start. The sequence of frames each level sees, and
// so every pairing and every value, is the CPU engine's; only when frames
// move on to the next level differs (here as they are made, on the CPU when
// their row completes), which changes no value.
package pyramid

import (
	"fmt"

	"github.com/zspool/zspool/pipeline"
)

// Kind is what an operation does.
type Kind int

const (
	// Reduce writes Frames frames into Level's row buffer at frame Dst,
	// from the frame sequence V = (Level's pending frame, when Pending)
	// followed by the frames of level Level−1 at Src (level 0: the epoch;
	// otherwise its row buffer). Output frame f reduces V[f·NZ] and, when
	// NZ is 2, V[f·NZ+1] along dim 0.
	Reduce Kind = iota
	// Hold copies frame Src of level Level−1 into Level's pending frame.
	Hold
	// Emit stores frames 0…Frames−1 of Level's row buffer as its chunk
	// rows Row…Row+Rows−1 (the last one short when Frames is not a whole
	// number of rows: end of data only).
	Emit
	// Compact moves frames Src…Src+Frames−1 of Level's row buffer to its
	// start. The two ranges never overlap.
	Compact
)

func (k Kind) String() string {
	return [...]string{"reduce", "hold", "emit", "compact"}[k]
}

// Op is one operation.
type Op struct {
	Kind      Kind
	Level     int
	Src, Dst  int64 // frame offsets
	Frames    int64
	Pending   bool
	NZ        int64
	Row, Rows int64
}

func (o Op) String() string {
	switch o.Kind {
	case Reduce:
		return fmt.Sprintf("reduce L%d[%d:+%d] ← L%d[%d:] pending %v nz %d", o.Level, o.Dst, o.Frames, o.Level-1, o.Src, o.Pending, o.NZ)
	case Hold:
		return fmt.Sprintf("hold L%d ← L%d[%d]", o.Level, o.Level-1, o.Src)
	case Emit:
		return fmt.Sprintf("emit L%d[0:%d] rows %d+%d", o.Level, o.Frames, o.Row, o.Rows)
	}
	return fmt.Sprintf("compact L%d[%d:+%d] → 0", o.Level, o.Src, o.Frames)
}

// State is the pyramid's progress through one stream of epochs.
type State struct {
	zdown       bool
	epochFrames int64
	levels      []level // index 0 unused
	started     bool
}

type level struct {
	rowCap   int64 // frames of a full chunk row: the level's chunk[0]
	capacity int64 // frames the row buffer must hold
	fill     int64 // frames in the row buffer
	row      int64 // the next row's index
	pending  bool
}

// New lays out the pyramid of a plan (which may have one level: then
// every step is empty).
func New(p *pipeline.Plan) *State {
	s := &State{epochFrames: p.EpochFrames(), levels: make([]level, len(p.Levels))}
	s.zdown = len(p.Levels) > 1 && p.Manifest.Dimensions[0].Downsampled()
	in := s.epochFrames // most frames the level above adds in one step
	for l := 1; l < len(p.Levels); l++ {
		lv := &s.levels[l]
		lv.rowCap = p.Levels[l].Grid.Chunk[0]
		if s.zdown {
			in = (in + 1) / 2 // with the pending frame, pairs of at most in+1 frames
		}
		// A partial row, one step's frames, and at the end of data one
		// more (a pending frame reduced alone).
		lv.capacity = lv.rowCap - 1 + max(in, 1)
		if lv.capacity < lv.rowCap {
			lv.capacity = lv.rowCap
		}
	}
	return s
}

// Levels is the number of levels, level 0 included.
func (s *State) Levels() int { return len(s.levels) }

// ZDown says dim 0 is downsampled.
func (s *State) ZDown() bool { return s.zdown }

// Capacity is the frames level l's row buffer must hold.
func (s *State) Capacity(l int) int64 { return s.levels[l].capacity }

// MaxRows is the most chunk rows one Emit of level l covers.
func (s *State) MaxRows(l int) int64 {
	lv := s.levels[l]
	return (lv.capacity + lv.rowCap - 1) / lv.rowCap
}

// RowCap is level l's frames per chunk row.
func (s *State) RowCap(l int) int64 { return s.levels[l].rowCap }

// Epoch returns the operations for level-0 epoch index of frames frames.
// The first epoch of a stream fixes every level's row numbering, as the
// CPU engine does: a resumed conversion starts each level at a row
// boundary.
func (s *State) Epoch(index, frames int64) []Op {
	if !s.started {
		for l := 1; l < len(s.levels); l++ {
			f := index * s.epochFrames
			if s.zdown {
				f >>= l
			}
			s.levels[l].row = f / s.levels[l].rowCap
			s.levels[l].fill, s.levels[l].pending = 0, false
		}
		s.started = true
	}
	return s.step(frames, false)
}

// Flush returns the operations at the end of data: every pending frame
// reduced alone and every partial row emitted. The state is then ready
// for a new stream.
func (s *State) Flush() []Op {
	if !s.started {
		return nil
	}
	ops := s.step(0, true)
	s.started = false
	return ops
}

func (s *State) step(frames int64, flush bool) []Op {
	var ops []Op
	src, m := int64(0), frames // the frames level l−1 added in this step
	for l := 1; l < len(s.levels); l++ {
		lv := &s.levels[l]
		start := lv.fill
		if !s.zdown {
			if m > 0 {
				ops = append(ops, Op{Kind: Reduce, Level: l, Src: src, Dst: lv.fill, Frames: m, NZ: 1})
				lv.fill += m
			}
		} else {
			v := m
			if lv.pending {
				v++
			}
			if n := v / 2; n > 0 {
				ops = append(ops, Op{Kind: Reduce, Level: l, Src: src, Dst: lv.fill, Frames: n, Pending: lv.pending, NZ: 2})
				lv.fill += n
			}
			if v%2 == 1 {
				if m > 0 {
					// The last frame is unpaired (with no pending frame
					// left over, an odd v ends on one of the new frames).
					ops = append(ops, Op{Kind: Hold, Level: l, Src: src + m - 1})
				}
				lv.pending = true
			} else {
				lv.pending = false
			}
			if flush && lv.pending {
				ops = append(ops, Op{Kind: Reduce, Level: l, Dst: lv.fill, Frames: 1, Pending: true, NZ: 1})
				lv.fill++
				lv.pending = false
			}
		}
		if lv.fill > lv.capacity {
			panic(fmt.Sprintf("pyramid: level %d holds %d frames, its buffer %d", l, lv.fill, lv.capacity))
		}
		src, m = start, lv.fill-start
	}
	for l := 1; l < len(s.levels); l++ {
		lv := &s.levels[l]
		n := lv.fill / lv.rowCap * lv.rowCap
		if flush {
			n = lv.fill
		}
		if n == 0 {
			continue
		}
		rows := (n + lv.rowCap - 1) / lv.rowCap
		ops = append(ops, Op{Kind: Emit, Level: l, Frames: n, Row: lv.row, Rows: rows})
		lv.row += rows
		if rest := lv.fill - n; rest > 0 {
			ops = append(ops, Op{Kind: Compact, Level: l, Src: n, Frames: rest})
		}
		lv.fill -= n
	}
	return ops
}
