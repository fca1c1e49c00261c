// Package cpu is the CPU engine, the reference every other engine must
// match byte for byte: workers scatter each chunk of a row out of the
// dense frames into their scratch buffer and compress it, and pyramid
// levels are computed from the level above (a cascade) as rows complete.
package cpu

import (
	"context"
	"fmt"
	"time"

	"github.com/zspool/zspool/pipeline"
)

var (
	_ pipeline.Engine      = (*Engine)(nil)
	_ pipeline.EpochHolder = (*Engine)(nil)
)

// Engine is the CPU engine for one plan.
type Engine struct {
	plan    *pipeline.Plan
	levels  []*cpuLevel
	red     *pipeline.Reducer
	zdown   bool // dim 0 is downsampled: level l folds 2^l epochs a row
	started bool
	reduce  *pipeline.Meter
	outs    []pipeline.LevelOutput
	// With two level-0 rows in flight (Plan.EngineRows), Encode starts
	// its epoch's row and returns the row before it: ahead is that row,
	// still compressing from an epoch Convert keeps until the next Encode.
	ahead *aheadRow
}

type aheadRow struct {
	row   *pipeline.Row
	index int64
}

// cpuLevel is one level's state: its row of dense frames being filled and,
// for a z-stack, the frame that waits for its pair.
type cpuLevel struct {
	lv         pipeline.Level
	layout     *pipeline.RowLayout
	comp       *pipeline.Compressor
	inner      []int64 // shape of dims ≥ 1
	half       []bool  // which inner dims this level halves
	frameBytes int64
	rowCap     int64 // frames a full row holds: chunk[0]
	row        []byte
	rowFrames  int64
	rowIndex   int64
	pending    []byte
	hasPending bool
	// emitted says the level stored a row in this Encode or Flush. A
	// level stores at most one an epoch, so its rows lent to the store
	// (Plan.Store.LentRows) are all in the assembler's hands by the next
	// Encode, and a Start waiting for one to come back waits on the
	// writers, never on an output Encode itself has yet to return.
	emitted bool
}

// New builds the CPU engine for a plan.
func New(p *pipeline.Plan) (*Engine, error) {
	c := &Engine{plan: p, reduce: pipeline.NewMeter("downsample")}
	m := p.Manifest
	c.zdown = len(p.Levels) > 1 && m.Dimensions[0].Downsampled()
	if len(p.Levels) > 1 {
		red, err := pipeline.NewReducer(m)
		if err != nil {
			return nil, err
		}
		c.red = red
	}
	for i, lv := range p.Levels {
		ll := pipeline.NewRowLayout(lv.Grid)
		// Each level holds its rows in flight and those it lends the
		// store (Plan.Store.LentRows).
		rows := 1 + p.Store.LentRows
		if i == 0 {
			rows = max(p.EngineRows, 1) + p.Store.LentRows
		}
		comp, err := pipeline.NewCompressor(p, p.ChunkBytes(lv), len(ll.Coords), rows, "scatter")
		if err != nil {
			c.Close()
			return nil, err
		}
		cl := &cpuLevel{lv: lv, layout: ll, comp: comp, inner: lv.Grid.Shape[1:], rowCap: lv.Grid.Chunk[0]}
		cl.frameBytes = lv.FrameBytes(p.Elem)
		if i > 0 {
			cl.half = make([]bool, len(cl.inner))
			for d := range cl.inner {
				cl.half[d] = m.Dimensions[d+1].Downsampled()
			}
			cl.row = make([]byte, cl.rowCap*cl.frameBytes)
			if c.zdown {
				cl.pending = make([]byte, p.Levels[i-1].FrameBytes(p.Elem))
			}
		}
		c.levels = append(c.levels, cl)
	}
	return c, nil
}

// rowsBefore is the number of level-l rows that precede level-0 epoch e:
// a resumed conversion starts every level at a row boundary.
func (c *Engine) rowsBefore(l int, e int64) int64 {
	frames := e * c.plan.EpochFrames()
	if c.zdown {
		frames >>= l
	}
	return frames / c.levels[l].rowCap
}

// Encode compresses level 0's row for this epoch and every pyramid row
// this epoch completes.
func (c *Engine) Encode(ctx context.Context, e pipeline.Epoch) ([]pipeline.LevelOutput, error) {
	if !c.started {
		for l := range c.levels {
			c.levels[l].rowIndex = c.rowsBefore(l, e.Index)
		}
		c.started = true
	}
	c.outs = c.outs[:0]
	c.newEpoch()
	l0 := c.levels[0]
	if !c.HoldsEpochs() {
		if err := c.compressRow(ctx, 0, e.Data, e.Frames); err != nil {
			return nil, err
		}
		l0.rowIndex++
		if err := c.pushPyramid(ctx, e); err != nil {
			return nil, err
		}
		return c.outs, nil
	}
	prev := c.ahead
	row, err := l0.comp.Start(ctx, len(l0.layout.Coords), int64(len(e.Data)), c.scatter(0, e.Data, e.Frames))
	if err != nil {
		return nil, err
	}
	c.ahead = &aheadRow{row: row, index: l0.rowIndex}
	l0.rowIndex++
	if err := c.pushPyramid(ctx, e); err != nil {
		if prev != nil {
			_ = l0.comp.Wait(prev.row) // Settle waits for the new row only
		}
		return nil, err
	}
	if prev != nil {
		if err := c.finishAhead(prev); err != nil {
			return nil, err
		}
	}
	return c.outs, nil
}

// HoldsEpochs says whether Encode returns before its epoch's row is
// compressed (pipeline.EpochHolder): when the plan has two rows in flight.
func (c *Engine) HoldsEpochs() bool { return c.plan.EngineRows > 1 }

// Settle waits for the level-0 row still compressing from an epoch
// Convert would release next (pipeline.EpochHolder), after a failure.
func (c *Engine) Settle() {
	if a := c.ahead; a != nil {
		c.ahead = nil
		_ = c.levels[0].comp.Wait(a.row)
	}
}

// finishAhead waits for a level-0 row Encode started and adds its output.
func (c *Engine) finishAhead(a *aheadRow) error {
	l0 := c.levels[0]
	if err := l0.comp.Wait(a.row); err != nil {
		return err
	}
	c.outs = append(c.outs, c.lend(l0, a.row, l0.layout.Group(0, a.index, a.row.Stored)))
	return nil
}

// pushPyramid feeds the epoch's frames to level 1, when there is one. The
// frames may be a mapped raw file's (pipeline.EpochMapper).
func (c *Engine) pushPyramid(ctx context.Context, e pipeline.Epoch) error {
	if len(c.levels) == 1 {
		return nil
	}
	var err error
	if gerr := pipeline.Guard(func() { err = c.push(ctx, 1, e.Data, e.Frames) }); gerr != nil {
		return gerr
	}
	return err
}

// newEpoch starts an Encode or a Flush: no level has stored a row in it.
func (c *Engine) newEpoch() {
	for _, cl := range c.levels {
		cl.emitted = false
	}
}

// compressRow stores one row of level l from its dense frames.
func (c *Engine) compressRow(ctx context.Context, l int, data []byte, frames int64) error {
	cl := c.levels[l]
	if cl.emitted && c.plan.Store.LentRows > 0 {
		// Its Start could wait for the lent row this Encode holds.
		return fmt.Errorf("level %d: a second chunk row in one epoch while the first is lent", l)
	}
	cl.emitted = true
	ll := cl.layout
	if err := cl.comp.Run(ctx, len(ll.Coords), int64(len(data)), c.scatter(l, data, frames)); err != nil {
		return err
	}
	c.outs = append(c.outs, c.lend(cl, cl.comp.Last(), ll.Group(l, cl.rowIndex, cl.comp.Stored)))
	return nil
}

// lend lends a stored row's bytes with its output, where the plan has
// the store take rows as they are (Plan.Store.LentRows).
func (c *Engine) lend(cl *cpuLevel, row *pipeline.Row, out pipeline.LevelOutput) pipeline.LevelOutput {
	if c.plan.Store.LentRows > 0 {
		out.Lease = cl.comp.Lend(row)
	}
	return out
}

// scatter is the compressor's chunk function for a row of level l: chunk
// i's box of the row's dense frames, into the worker's scratch.
func (c *Engine) scatter(l int, data []byte, frames int64) func(i int, buf []byte) []byte {
	ll, g := c.levels[l].layout, c.levels[l].layout.Grid
	return func(i int, buf []byte) []byte {
		box := g.EpochBox(ll.Coords[i], frames, c.plan.Elem)
		if frames < g.Chunk[0] || box.Padded() {
			clear(buf)
		}
		box.Scatter(data, buf)
		return buf
	}
}

// push feeds frames of level l−1 to level l: each frame (or, for a z-stack,
// each pair of frames) reduces to one level-l frame; a full row is stored
// and its frames go on to the next level.
func (c *Engine) push(ctx context.Context, l int, data []byte, frames int64) error {
	cl, up := c.levels[l], c.levels[l-1]
	for f := range frames {
		frame := data[f*up.frameBytes : (f+1)*up.frameBytes]
		switch {
		case !c.zdown:
			c.reduceInto(cl, up, frame)
		case cl.hasPending:
			c.reduceInto(cl, up, cl.pending, frame)
			cl.hasPending = false
		default:
			copy(cl.pending, frame)
			cl.hasPending = true
			continue
		}
		if cl.rowFrames == cl.rowCap {
			if err := c.emitRow(ctx, l); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Engine) reduceInto(cl, up *cpuLevel, srcs ...[]byte) {
	start := time.Now()
	dst := cl.row[cl.rowFrames*cl.frameBytes : (cl.rowFrames+1)*cl.frameBytes]
	c.red.Reduce(dst, srcs, up.inner, cl.inner, cl.half)
	cl.rowFrames++
	c.reduce.Add(int64(len(srcs))*up.frameBytes, time.Since(start))
}

func (c *Engine) emitRow(ctx context.Context, l int) error {
	cl := c.levels[l]
	data, frames := cl.row[:cl.rowFrames*cl.frameBytes], cl.rowFrames
	if err := c.compressRow(ctx, l, data, frames); err != nil {
		return err
	}
	cl.rowIndex++
	cl.rowFrames = 0
	if l+1 < len(c.levels) {
		return c.push(ctx, l+1, data, frames)
	}
	return nil
}

// Flush emits, level by level, a z-stack's unpaired last frame (reduced
// from its true count of contributors) and every partial last row.
func (c *Engine) Flush(ctx context.Context) ([]pipeline.LevelOutput, error) {
	c.outs = c.outs[:0]
	c.newEpoch()
	if a := c.ahead; a != nil {
		c.ahead = nil
		if err := c.finishAhead(a); err != nil {
			return nil, err
		}
	}
	for l := 1; l < len(c.levels); l++ {
		cl := c.levels[l]
		if cl.hasPending {
			c.reduceInto(cl, c.levels[l-1], cl.pending)
			cl.hasPending = false
		}
		if cl.rowFrames > 0 {
			if err := c.emitRow(ctx, l); err != nil {
				return nil, err
			}
		}
	}
	return c.outs, nil
}

// Stages reports scatter and compress summed over levels, and downsample.
func (c *Engine) Stages() []pipeline.Stage {
	var scatter, comp pipeline.Stage
	for _, cl := range c.levels {
		st := cl.comp.Stages()
		scatter = addStage(scatter, st[0])
		comp = addStage(comp, st[1])
	}
	out := []pipeline.Stage{scatter, comp}
	if len(c.levels) > 1 {
		out = append(out, c.reduce.Snapshot())
	}
	return out
}

func addStage(a, b pipeline.Stage) pipeline.Stage {
	return pipeline.Stage{Name: b.Name, Bytes: a.Bytes + b.Bytes, Busy: a.Busy + b.Busy, Best: max(a.Best, b.Best)}
}

// Close releases the encoders.
func (c *Engine) Close() error {
	for _, cl := range c.levels {
		if cl.comp != nil {
			cl.comp.Close()
		}
	}
	return nil
}
