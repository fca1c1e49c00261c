//go:build cuda

package kernels

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/zspool/zspool/kernels/internal/layout"
	"github.com/zspool/zspool/pipeline"
)

// Engine is the GPU engine for level 0. Each epoch goes through three
// streams: the host-to-device copy from pinned staging, the compute stream
// (scatter into the chunk layout with an all-fill flag per chunk, then
// aggregate: keys in shard order, scan, gather of the present chunks), and
// the device-to-host copy of the sizes and then of exactly the bytes the
// scan counted. Events order the streams; the host never synchronises the
// whole device in steady state.
//
// The pipeline is two epochs deep: Encode of epoch n queues n, starts the
// copy back of n−1 and hands out n−2, so the copy engines move n in and
// n−1 out while the host assembles (and, for zstd, compresses) n−2. Flush
// hands out the last two. Compression stays on the CPU (the shared
// pipeline.Compressor, reading the chunks straight from pinned memory).
type Engine struct {
	dev    *Device
	ownDev bool
	plan   *pipeline.Plan
	ll     *pipeline.RowLayout
	full   *layout.Params // a full epoch's layout
	keyOf  []uint64       // per chunk of a row: its key in the shard order
	chunk  int64          // bytes of one padded chunk
	comp   *pipeline.Compressor
	zero   []byte // a fill chunk: what absent chunks are compressed as

	// Device memory. Two of each per-epoch buffer that a copy and the
	// compute stream may use at once.
	dIn      [2]cu.DevicePtr
	dOut     [2]cu.DevicePtr
	dOffsets [2]cu.DevicePtr
	dLayout  cu.DevicePtr
	dFlags   cu.DevicePtr
	dKeyOf   cu.DevicePtr
	dSizes   cu.DevicePtr
	shapes   map[int64]*batchKernels // by frames per batch

	// Pinned host memory.
	staging  [2][]byte
	hOut     [2][]byte
	hOffsets [2][]byte

	h2d, compute, d2h cu.Stream
	ev                [4]events // by batch number mod 4
	inflight          [4]batch
	next              int64 // batches queued since the start or the last Flush
	err               error // sticky: the engine is unusable after a failure
	closed            bool

	mu     sync.Mutex
	meters [4]meter // H2D, scatter, aggregate, D2H
}

type events struct {
	h2dStart, h2dEnd, scatterStart, scatterEnd, aggEnd, metaStart, metaEnd, bytesStart, bytesEnd cu.Event
}

// batch is one queued epoch.
type batch struct {
	index, frames, raw int64
	offsets            []uint64 // the scan, copied out of pinned memory when its bytes are fetched
	total              uint64
}

const (
	stageH2D = iota
	stageScatter
	stageAggregate
	stageD2H
)

// New opens GPU 0 and builds an engine for p on it; Close releases both.
func New(p *pipeline.Plan) (*Engine, error) {
	dev, err := Open(0)
	if err != nil {
		return nil, err
	}
	e, err := NewEngine(dev, p)
	if err != nil {
		dev.Close()
		return nil, err
	}
	e.ownDev = true
	return e, nil
}

// NewEngine builds an engine for p on an open device. Its buffers come out
// of the device's memory until Close.
func NewEngine(dev *Device, p *pipeline.Plan) (*Engine, error) {
	if len(p.Levels) > 1 {
		return nil, fmt.Errorf("multiscale: %d levels planned, but the GPU engine writes level 0 only (%w); drop \"multiscale\" from the manifest or use the CPU engine", len(p.Levels), ErrUnsupported)
	}
	codec := p.Manifest.Compression.Codec
	if codec != "zstd" && codec != "none" {
		return nil, fmt.Errorf("codec %q: %w (it handles zstd and none)", codec, ErrUnsupported)
	}
	g := p.Levels[0].Grid
	full, err := layout.New(g, p.EpochFrames(), p.Elem)
	if err != nil {
		return nil, err
	}
	e := &Engine{dev: dev, plan: p, ll: pipeline.NewRowLayout(g), full: full,
		chunk: p.ChunkBytes(p.Levels[0]), shapes: make(map[int64]*batchKernels)}
	if int64(full.InBytes) != p.EpochBytes() || full.Epochs != 1 || full.NChunks != uint64(len(e.ll.Coords)) {
		return nil, fmt.Errorf("GPU layout of %d bytes in %d chunks disagrees with the plan's epoch of %d bytes in %d chunks",
			full.InBytes, full.NChunks, p.EpochBytes(), len(e.ll.Coords))
	}
	e.keyOf = make([]uint64, len(e.ll.Coords))
	for i := range e.keyOf {
		e.keyOf[i] = uint64(e.ll.ShardOf[i]*e.ll.InnerSize + e.ll.InnerSlot[i])
	}
	if codec == "zstd" {
		if e.comp, err = pipeline.NewCompressor(p, e.chunk, len(e.keyOf), "chunk view"); err != nil {
			return nil, err
		}
		e.zero = make([]byte, e.chunk)
	}
	if err := dev.do(e.allocate); err != nil {
		_ = dev.do(e.free)
		if e.comp != nil {
			e.comp.Close()
		}
		return nil, fmt.Errorf("GPU %d: %w", dev.Info.Ordinal, err)
	}
	return e, nil
}

// allocate takes the engine's device and pinned memory, streams and
// events. On the device goroutine.
func (e *Engine) allocate() error {
	in, out, keys := int64(e.full.InBytes), int64(e.full.OutBytes()), int64(e.full.Keys)
	chunks := int64(e.full.NChunks)
	need := 2*in + 3*out + 4*chunks + 8*chunks + 8*keys + 2*8*(keys+1)
	if free, _, err := cu.MemInfo(); err == nil && need > free {
		return fmt.Errorf("the engine needs %s of GPU memory, %s is free: lower dimensions[0].chunk",
			pipeline.FormatBytes(need), pipeline.FormatBytes(free))
	}
	alloc := func(dst *cu.DevicePtr, n int64) error {
		var err error
		if *dst, err = cu.MemAlloc(max(n, 8)); err != nil {
			return fmt.Errorf("allocate %s of GPU memory: %w", pipeline.FormatBytes(n), err)
		}
		return nil
	}
	pinned := func(dst *[]byte, n int64) error {
		var err error
		*dst, err = hostAlloc(n)
		return err
	}
	for b := range 2 {
		for _, step := range []error{
			alloc(&e.dIn[b], in), alloc(&e.dOut[b], out), alloc(&e.dOffsets[b], 8*(keys+1)),
			pinned(&e.staging[b], in), pinned(&e.hOut[b], out), pinned(&e.hOffsets[b], 8*(keys+1)),
		} {
			if step != nil {
				return step
			}
		}
	}
	for _, step := range []error{
		alloc(&e.dLayout, out), alloc(&e.dFlags, 4*chunks), alloc(&e.dKeyOf, 8*chunks), alloc(&e.dSizes, 8*keys),
	} {
		if step != nil {
			return step
		}
	}
	var err error
	for _, s := range []*cu.Stream{&e.h2d, &e.compute, &e.d2h} {
		if *s, err = cu.MakeStream(cu.NonBlocking); err != nil {
			return fmt.Errorf("create stream: %w", err)
		}
	}
	for i := range e.ev {
		ev := &e.ev[i]
		for _, x := range []*cu.Event{&ev.h2dStart, &ev.h2dEnd, &ev.scatterStart, &ev.scatterEnd, &ev.aggEnd,
			&ev.metaStart, &ev.metaEnd, &ev.bytesStart, &ev.bytesEnd} {
			if *x, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
				return fmt.Errorf("create event: %w", err)
			}
		}
	}
	for i := range e.inflight {
		e.inflight[i].offsets = make([]uint64, keys+1)
	}
	return nil
}

// free releases what allocate took, once the streams are idle. On the
// device goroutine.
func (e *Engine) free() error {
	var errs []error
	for _, s := range []*cu.Stream{&e.h2d, &e.compute, &e.d2h} {
		if *s != (cu.Stream{}) {
			errs = append(errs, s.Synchronize(), s.Destroy())
		}
	}
	for i := range e.ev {
		ev := &e.ev[i]
		for _, x := range []*cu.Event{&ev.h2dStart, &ev.h2dEnd, &ev.scatterStart, &ev.scatterEnd, &ev.aggEnd,
			&ev.metaStart, &ev.metaEnd, &ev.bytesStart, &ev.bytesEnd} {
			if *x != (cu.Event{}) {
				errs = append(errs, cu.DestroyEvent(x))
			}
		}
	}
	ptrs := []*cu.DevicePtr{&e.dLayout, &e.dFlags, &e.dKeyOf, &e.dSizes}
	for b := range 2 {
		ptrs = append(ptrs, &e.dIn[b], &e.dOut[b], &e.dOffsets[b])
		for _, h := range []*[]byte{&e.staging[b], &e.hOut[b], &e.hOffsets[b]} {
			errs = append(errs, hostFree(*h))
			*h = nil
		}
	}
	for _, bk := range e.shapes {
		ptrs = append(ptrs, &bk.dParams)
	}
	for _, p := range ptrs {
		if *p != 0 {
			errs = append(errs, cu.MemFree(*p))
			*p = 0
		}
	}
	return errors.Join(errs...)
}

// StagingBuffers are the two pinned buffers the raw reader fills.
func (e *Engine) StagingBuffers() [][]byte { return [][]byte{e.staging[0], e.staging[1]} }

// Encode queues epoch ep and hands out the epoch queued two calls ago.
// ep.Data may be reused once Encode returns: its copy to the GPU is done.
func (e *Engine) Encode(ctx context.Context, ep pipeline.Epoch) ([]pipeline.LevelOutput, error) {
	if e.err != nil {
		return nil, e.err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ep.Frames < 1 || ep.Frames > e.plan.EpochFrames() || int64(len(ep.Data)) != ep.Frames*e.plan.FrameBytes {
		return nil, fmt.Errorf("epoch %d: %d bytes for %d frames of %d bytes (at most %d frames an epoch)",
			ep.Index, len(ep.Data), ep.Frames, e.plan.FrameBytes, e.plan.EpochFrames())
	}
	n := e.next
	if err := e.dev.do(func() error { return e.submit(n, ep) }); err != nil {
		return nil, e.fail(fmt.Errorf("epoch %d: %w", ep.Index, err))
	}
	e.next++
	var outs []pipeline.LevelOutput
	if n >= 2 {
		out, err := e.collect(ctx, n-2)
		if err != nil {
			return nil, e.fail(err)
		}
		outs = append(outs, out)
	}
	// The reader refills ep.Data as soon as Encode returns.
	if err := e.dev.do(func() error { return e.ev[n&3].h2dEnd.Synchronize() }); err != nil {
		return nil, e.fail(fmt.Errorf("epoch %d: copy to GPU: %w", ep.Index, err))
	}
	return outs, nil
}

// Flush hands out the epochs still in flight. The engine can take a new
// stream of epochs afterwards.
func (e *Engine) Flush(ctx context.Context) ([]pipeline.LevelOutput, error) {
	if e.err != nil {
		return nil, e.err
	}
	n := e.next
	var outs []pipeline.LevelOutput
	if n >= 1 {
		if err := e.dev.do(func() error { return e.fetch(n - 1) }); err != nil {
			return nil, e.fail(fmt.Errorf("flush: %w", err))
		}
	}
	for m := max(0, n-2); m < n; m++ {
		out, err := e.collect(ctx, m)
		if err != nil {
			return nil, e.fail(err)
		}
		if e.comp != nil && m < n-1 {
			// The next Run reuses the compressor's buffers.
			out = detach(out)
		}
		outs = append(outs, out)
	}
	e.next = 0
	return outs, nil
}

func (e *Engine) fail(err error) error {
	e.err = err
	return err
}

// shape returns the kernels for a batch of frames frames. On the device
// goroutine.
func (e *Engine) shape(frames int64) (*batchKernels, error) {
	if bk, ok := e.shapes[frames]; ok {
		return bk, nil
	}
	p, err := layout.New(e.plan.Levels[0].Grid, frames, e.plan.Elem)
	if err != nil {
		return nil, err
	}
	bk, err := e.dev.prepare(p)
	if err != nil {
		return nil, err
	}
	e.shapes[frames] = bk
	return bk, nil
}

// submit queues batch n: its copy in, scatter and aggregate, the copy back
// of batch n−1's bytes and of batch n's sizes. On the device goroutine.
func (e *Engine) submit(n int64, ep pipeline.Epoch) error {
	b, ev, prev := n&1, &e.ev[n&3], &e.ev[(n+2)&3] // prev: batch n−2, the buffers' last user
	bk, err := e.shape(ep.Frames)
	if err != nil {
		return err
	}
	steps := []struct {
		what string
		run  func() error
	}{
		{"wait for the input buffer", func() error { return e.h2d.Wait(prev.scatterEnd, 0) }},
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
			return e.dev.aggregate(e.compute, bk, e.dLayout, e.dFlags, e.dKeyOf, e.dSizes, e.dOffsets[b], e.dOut[b], prev.bytesEnd)
		}},
		{"record", func() error { return ev.aggEnd.Record(e.compute) }},
		{"fetch the previous epoch", func() error {
			if n == 0 {
				return nil
			}
			return e.fetch(n - 1)
		}},
		{"wait for the aggregate", func() error { return e.d2h.Wait(ev.aggEnd, 0) }},
		{"record", func() error { return ev.metaStart.Record(e.d2h) }},
		{"copy sizes back", func() error {
			return cu.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(e.hOffsets[b])), e.dOffsets[b], int64(len(e.hOffsets[b])), e.d2h)
		}},
		{"record", func() error { return ev.metaEnd.Record(e.d2h) }},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	e.inflight[n&3] = batch{index: ep.Index, frames: ep.Frames, raw: int64(len(ep.Data)), offsets: e.inflight[n&3].offsets}
	return nil
}

// fetch waits for batch m's sizes and queues the copy back of exactly the
// bytes they add up to. On the device goroutine.
func (e *Engine) fetch(m int64) error {
	b, ev, bt := m&1, &e.ev[m&3], &e.inflight[m&3]
	if err := ev.metaEnd.Synchronize(); err != nil {
		return fmt.Errorf("copy sizes back: %w", err)
	}
	copy(bt.offsets, unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(e.hOffsets[b]))), len(bt.offsets)))
	bt.total = bt.offsets[len(bt.offsets)-1]
	if bt.total > uint64(len(e.hOut[b])) || bt.total%uint64(e.chunk) != 0 {
		return fmt.Errorf("the GPU counted %d bytes of chunks of %d bytes, at most %d fit", bt.total, e.chunk, len(e.hOut[b]))
	}
	if err := ev.bytesStart.Record(e.d2h); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if bt.total > 0 {
		if err := cu.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(e.hOut[b])), e.dOut[b], int64(bt.total), e.d2h); err != nil {
			return fmt.Errorf("copy chunks back: %w", err)
		}
	}
	if err := ev.bytesEnd.Record(e.d2h); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// collect waits for batch m's bytes, books its stage times and turns it
// into the level's chunk row.
func (e *Engine) collect(ctx context.Context, m int64) (pipeline.LevelOutput, error) {
	b, ev, bt := m&1, &e.ev[m&3], &e.inflight[m&3]
	var ms [4]float64
	err := e.dev.do(func() error {
		if err := ev.bytesEnd.Synchronize(); err != nil {
			return fmt.Errorf("copy chunks back: %w", err)
		}
		pairs := [][2]cu.Event{{ev.h2dStart, ev.h2dEnd}, {ev.scatterStart, ev.scatterEnd}, {ev.scatterEnd, ev.aggEnd}, {ev.metaStart, ev.metaEnd}}
		for i, p := range pairs {
			t, err := p[0].Elapsed(p[1])
			if err != nil {
				return fmt.Errorf("stage timing: %w", err)
			}
			ms[i] = t
		}
		t, err := ev.bytesStart.Elapsed(ev.bytesEnd)
		ms[stageD2H] += t
		return err
	})
	if err != nil {
		return pipeline.LevelOutput{}, fmt.Errorf("epoch %d: %w", bt.index, err)
	}
	meta := int64(len(e.hOffsets[b]))
	e.mu.Lock()
	for i, n := range []int64{bt.raw, bt.raw, int64(bt.total), int64(bt.total) + meta} {
		e.meters[i].add(n, time.Duration(ms[i]*float64(time.Millisecond)))
	}
	e.mu.Unlock()
	return e.output(ctx, bt, e.hOut[b][:bt.total])
}

// output builds the chunk row of batch bt from its shard-ordered bytes:
// views into pinned memory for codec none, the compressor's output for
// zstd.
func (e *Engine) output(ctx context.Context, bt *batch, buf []byte) (pipeline.LevelOutput, error) {
	offs := bt.offsets
	for i, k := range e.keyOf {
		if n := offs[k+1] - offs[k]; n != 0 && n != uint64(e.chunk) {
			return pipeline.LevelOutput{}, fmt.Errorf("epoch %d: the GPU sized chunk %d at %d bytes, not %d or 0", bt.index, i, n, e.chunk)
		}
	}
	view := func(i int) []byte {
		lo, hi := offs[e.keyOf[i]], offs[e.keyOf[i]+1]
		if lo == hi {
			return nil
		}
		return buf[lo:hi:hi]
	}
	if e.comp == nil {
		return e.ll.Group(0, bt.index, view), nil
	}
	err := e.comp.Run(ctx, len(e.keyOf), bt.raw, func(i int, _ []byte) []byte {
		if v := view(i); v != nil {
			return v
		}
		return e.zero
	})
	if err != nil {
		return pipeline.LevelOutput{}, fmt.Errorf("epoch %d: %w", bt.index, err)
	}
	return e.ll.Group(0, bt.index, e.comp.Stored), nil
}

// detach copies a chunk row's bytes into memory of its own.
func detach(out pipeline.LevelOutput) pipeline.LevelOutput {
	var n int
	for _, s := range out.Shards {
		for _, c := range s.Chunks {
			n += len(c.Data)
		}
	}
	buf := make([]byte, 0, n)
	for _, s := range out.Shards {
		for j, c := range s.Chunks {
			if c.Data != nil {
				at := len(buf)
				buf = append(buf, c.Data...)
				s.Chunks[j].Data = buf[at:len(buf):len(buf)]
			}
		}
	}
	return out
}

// Stages reports H2D, scatter, compress (zstd), aggregate and D2H, timed
// on the GPU with events (compress on the host).
func (e *Engine) Stages() []pipeline.Stage {
	e.mu.Lock()
	defer e.mu.Unlock()
	names := [4]string{"H2D", "scatter", "aggregate", "D2H"}
	st := func(i int) pipeline.Stage { return e.meters[i].stage(names[i]) }
	out := []pipeline.Stage{st(stageH2D), st(stageScatter)}
	if e.comp != nil {
		for _, s := range e.comp.Stages() {
			if s.Name == "compress" {
				out = append(out, s)
			}
		}
	}
	return append(out, st(stageAggregate), st(stageD2H))
}

// ResetStages clears the stage figures (the bench's warm-up).
func (e *Engine) ResetStages() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.meters = [4]meter{}
}

// Device is the GPU the engine runs on.
func (e *Engine) Device() Info { return e.dev.Info }

// Close waits for the GPU and releases the engine's memory (and the device,
// when New opened it). Buffers from StagingBuffers are gone afterwards.
func (e *Engine) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.comp != nil {
		e.comp.Close()
	}
	if e.ownDev {
		return e.dev.Close()
	}
	return e.dev.do(e.free)
}

// meter sums one stage's samples.
type meter struct {
	bytes int64
	busy  time.Duration
	best  float64
}

func (m *meter) add(n int64, d time.Duration) {
	m.bytes += n
	m.busy += d
	if d > 0 {
		m.best = max(m.best, float64(n)/d.Seconds())
	}
}

func (m *meter) stage(name string) pipeline.Stage {
	return pipeline.Stage{Name: name, Bytes: m.bytes, Busy: m.busy, Best: m.best}
}
