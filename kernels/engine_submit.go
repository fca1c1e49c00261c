//go:build cuda

package kernels

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/zspool/zspool/kernels/internal/layout"
	"github.com/zspool/zspool/kernels/internal/pyramid"
	"github.com/zspool/zspool/pipeline"
)

// Submission: an epoch's copy in, scatter, aggregate, encode and pyramid
// steps queued on the streams, ordered by events.

// shape returns level 0's kernels for a batch of frames frames. On the
// device goroutine.
func (e *Engine) shape(frames int64) (*batchKernels, error) {
	return e.shapeOf(e.shapes, 0, frames)
}

func (e *Engine) shapeOf(shapes map[int64]*batchKernels, l int, frames int64) (*batchKernels, error) {
	if bk, ok := shapes[frames]; ok {
		return bk, nil
	}
	p, err := layout.New(e.plan.Levels[l].Grid, frames, e.plan.Elem)
	if err != nil {
		return nil, err
	}
	bk, err := e.dev.prepare(p)
	if err != nil {
		return nil, err
	}
	shapes[frames] = bk
	return bk, nil
}

// step is one queued GPU operation, named for the error that says where a
// batch failed.
type step struct {
	what string
	run  func() error
}

func runSteps(steps []step) error {
	for _, s := range steps {
		if err := s.run(); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return nil
}

// submit queues batch n: its copy in, scatter and aggregate, the pyramid's
// operations, the copy back of batch n−1's bytes and of batch n's sizes.
// ep nil is the pyramid's end of data: its operations alone. On the device
// goroutine.
func (e *Engine) submit(n int64, ep *pipeline.Epoch, ops []pyramid.Op) error {
	b, ev, prev := n&1, &e.ev[n&3], &e.ev[(n+2)&3] // prev: batch n−2, the buffers' last user
	bt := &e.inflight[n&3]
	*bt = batch{offsets: bt.offsets, groups: bt.groups[:0], level0: ep != nil}
	var steps []step
	if ep != nil {
		bk, err := e.shape(ep.Frames)
		if err != nil {
			return err
		}
		bt.index, bt.frames, bt.raw = ep.Index, ep.Frames, int64(len(ep.Data))
		// The input buffer is free once batch n−2's last reader is done:
		// its scatter, or its reductions when there is a pyramid.
		free := prev.scatterEnd
		if len(e.levels) > 1 {
			free = prev.reduceEnd
		}
		steps = append(steps, []step{
			{"wait for the input buffer", func() error { return e.h2d.Wait(free, 0) }},
			{"record", func() error { return ev.h2dStart.Record(e.h2d) }},
			{"copy to GPU", func() error {
				return cu.MemcpyHtoDAsync(e.dIn[b], unsafe.Pointer(unsafe.SliceData(ep.Data)), int64(len(ep.Data)), e.h2d)
			}},
			{"record", func() error { return ev.h2dEnd.Record(e.h2d) }},
			{"wait for the copy", func() error { return e.compute.Wait(ev.h2dEnd, 0) }},
			{"record", func() error { return ev.scatterStart.Record(e.compute) }},
			{"scatter", func() error { return e.dev.scatter(e.compute, bk, e.dIn[b], e.dLayout, e.dFlags) }},
			{"record", func() error { return ev.scatterEnd.Record(e.compute) }},
			{"aggregate", func() error {
				return e.dev.aggregate(e.compute, bk, e.lit, e.dLayout, e.dFlags, e.dKeyOf, e.dSizes, e.dOffsets[b], e.dOut[b],
					prev.bytesEnd, &ev.compStart)
			}},
		}...)
	} else {
		// No level 0: the level outputs' buffers still wait for batch
		// n−2's copy back.
		steps = append(steps, step{"wait for the output buffers", func() error { return e.compute.Wait(prev.bytesEnd, 0) }})
	}
	steps = append(steps, step{"record", func() error { return ev.aggEnd.Record(e.compute) }})
	steps = append(steps, e.pyramidSteps(n, ep, ops)...)
	steps = append(steps, step{"fetch the previous epoch", func() error {
		if n == 0 || ep == nil {
			return nil
		}
		return e.fetch(n - 1)
	}})
	steps = append(steps,
		step{"wait for the aggregate", func() error { return e.d2h.Wait(ev.levelsEnd, 0) }},
		step{"record", func() error { return ev.metaStart.Record(e.d2h) }})
	if ep != nil {
		steps = append(steps, step{"copy sizes back", func() error {
			return cu.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(e.hOffsets[b])), e.dOffsets[b], int64(len(e.hOffsets[b])), e.d2h)
		}})
	}
	steps = append(steps, step{"copy level sizes back", func() error {
		for i := range bt.groups {
			gr := &bt.groups[i]
			n := 8 * int64(gr.bk.p.Keys+1)
			if err := cu.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(gr.level.hOffsets[b])), gr.level.dOffsets[b], n, e.d2h); err != nil {
				return fmt.Errorf("level %d: %w", gr.level.index, err)
			}
		}
		return nil
	}}, step{"record", func() error { return ev.metaEnd.Record(e.d2h) }})
	return runSteps(steps)
}

// pyramidSteps queues a batch's pyramid operations on the compute stream:
// first every reduction (and the frames held for a pair), then every
// level's emitted rows (scatter and aggregate into the level's output
// buffers of this batch) and the moves of partial rows. The groups are
// booked into the batch as the steps run.
func (e *Engine) pyramidSteps(n int64, ep *pipeline.Epoch, ops []pyramid.Op) []step {
	b, ev, bt := n&1, &e.ev[n&3], &e.inflight[n&3]
	// frame locates frame f of level l (0: the epoch in dIn).
	frame := func(l int, f int64) cu.DevicePtr {
		if l == 0 {
			return e.dIn[b] + cu.DevicePtr(f*e.plan.FrameBytes)
		}
		lv := e.levels[l]
		return lv.dRows + cu.DevicePtr(f*lv.frameBytes)
	}
	var steps []step
	for _, op := range ops {
		if op.Kind != pyramid.Reduce && op.Kind != pyramid.Hold {
			continue
		}
		lv := e.levels[op.Level]
		switch op.Kind {
		case pyramid.Reduce:
			steps = append(steps, step{fmt.Sprintf("level %d: reduce", op.Level), func() error {
				var src cu.DevicePtr
				if !op.Pending || op.Frames*op.NZ > 1 {
					src = frame(op.Level-1, op.Src)
				}
				bt.reduced += op.Frames * op.NZ * lv.inFrame
				return e.dev.reduce(e.compute, lv.rk, frame(op.Level, op.Dst), lv.dPending, src, op.Pending, op.Frames, op.NZ)
			}})
		case pyramid.Hold:
			steps = append(steps, step{fmt.Sprintf("level %d: hold a frame", op.Level), func() error {
				return cu.MemcpyDtoDAsync(lv.dPending, frame(op.Level-1, op.Src), lv.inFrame, e.compute)
			}})
		}
	}
	steps = append(steps, step{"record", func() error { return ev.reduceEnd.Record(e.compute) }})
	for _, op := range ops {
		if op.Kind != pyramid.Emit && op.Kind != pyramid.Compact {
			continue
		}
		lv := e.levels[op.Level]
		switch op.Kind {
		case pyramid.Emit:
			steps = append(steps, step{fmt.Sprintf("level %d: rows %d…%d", op.Level, op.Row, op.Row+op.Rows-1), func() error {
				bk, err := e.shapeOf(lv.shapes, op.Level, op.Frames)
				if err != nil {
					return err
				}
				if bk.p.Epochs != uint64(op.Rows) {
					return fmt.Errorf("%d frames lay out as %d rows, the pyramid counts %d", op.Frames, bk.p.Epochs, op.Rows)
				}
				if err := e.dev.scatter(e.compute, bk, lv.dRows, e.dLayout, e.dFlags); err != nil {
					return err
				}
				if err := e.dev.aggregate(e.compute, bk, e.lit, e.dLayout, e.dFlags, e.dKeyOf, e.dSizes, lv.dOffsets[b], lv.dOut[b], cu.Event{}, nil); err != nil {
					return err
				}
				bt.leveled += op.Frames * lv.frameBytes
				bt.groups = append(bt.groups, group{level: lv, row: op.Row, rows: op.Rows, frames: op.Frames, bk: bk})
				return nil
			}})
		case pyramid.Compact:
			steps = append(steps, step{fmt.Sprintf("level %d: keep a partial row", op.Level), func() error {
				return cu.MemcpyDtoDAsync(lv.dRows, frame(op.Level, op.Src), op.Frames*lv.frameBytes, e.compute)
			}})
		}
	}
	return append(steps, step{"record", func() error { return ev.levelsEnd.Record(e.compute) }})
}
