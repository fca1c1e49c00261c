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
	"github.com/zspool/zspool/kernels/internal/pyramid"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zstdlit"
)

// Engine is the GPU engine. Each epoch goes through three streams: the
// host-to-device copy from pinned staging, the compute stream (scatter
// into the chunk layout with an all-fill flag per chunk, then aggregate:
// keys in shard order, scan, gather of the present chunks; then the
// pyramid levels, below), and the device-to-host copy of the sizes and
// then of exactly the bytes the scan counted. Events order the streams;
// the host never synchronises the whole device in steady state.
//
// Pyramid levels are reduced on the GPU from the level-0 frames already
// there (a cascade: level l+1 from level l) into dense per-level frame
// buffers; each chunk row a level completes is scattered and aggregated
// like level 0's and comes back with its epoch. Package pyramid keeps the
// books (which frames pair, what carries over, which rows complete) so
// the values are exactly the CPU engine's.
//
// The pipeline is two epochs deep: Encode of epoch n queues n, starts the
// copy back of n−1 and hands out n−2, so the copy engines move n in and
// n−1 out while the host assembles (and, for klauspost, compresses) n−2. Flush
// hands out the last two and what the pyramid still holds.
//
// Under zstd the GPU encodes (zstdlit.cuh) unless the plan asks for
// klauspost: the encoder plans every chunk's frame after the scatter, the
// frames' sizes go through the aggregate's scan in place of the chunk
// sizes, and the encoder writes each frame at its shard-order offset, so
// only compressed bytes cross back. With klauspost the chunks come back
// raw and the shared pipeline.Compressor encodes them on the host,
// reading straight from pinned memory.
type Engine struct {
	dev    *Device
	ownDev bool
	plan   *pipeline.Plan
	ll     *pipeline.RowLayout
	full   *layout.Params // a full epoch's layout
	chunk  int64          // bytes of one padded chunk
	comp   *pipeline.Compressor
	zero   []byte // a fill chunk: what absent chunks are compressed as
	// gpuZstd: the GPU encodes (codec zstd with the default or lit
	// encoder; comp is nil) in lit, its scratch. Output buffers then hold
	// frames up to LitFrameBound per chunk instead of raw chunks.
	gpuZstd bool
	litOpt  zstdlit.Options
	lit     *litScratch

	pyr    *pyramid.State
	levels []*level // index 0 unused

	// Device memory. Two of each per-epoch buffer that a copy and the
	// compute stream may use at once; the chunk layout, flags, keys and
	// sizes are the compute stream's alone and serve every level.
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
	meters [stages]meter
}

// level is one pyramid level's GPU state.
type level struct {
	index      int
	ll         *pipeline.RowLayout
	frameBytes int64
	inFrame    int64 // bytes of a frame of the level above
	chunk      int64 // bytes of one padded chunk
	maxFrames  int64 // most frames one emission covers
	red        *layout.Reduce
	rk         *reduceKernel
	shapes     map[int64]*batchKernels
	comp       *pipeline.Compressor
	zero       []byte

	dRows    cu.DevicePtr // dense frames: the partial row, then new ones
	dPending cu.DevicePtr // a frame of the level above waiting for its pair
	dOut     [2]cu.DevicePtr
	dOffsets [2]cu.DevicePtr
	hOut     [2][]byte
	hOffsets [2][]byte
}

type events struct {
	h2dStart, h2dEnd, scatterStart, scatterEnd, compStart, aggEnd, reduceEnd, levelsEnd, metaStart, metaEnd, bytesStart, bytesEnd cu.Event
}

func (ev *events) all() []*cu.Event {
	return []*cu.Event{&ev.h2dStart, &ev.h2dEnd, &ev.scatterStart, &ev.scatterEnd, &ev.compStart, &ev.aggEnd, &ev.reduceEnd, &ev.levelsEnd,
		&ev.metaStart, &ev.metaEnd, &ev.bytesStart, &ev.bytesEnd}
}

// batch is one queued epoch, or the pyramid's end of data (no level 0).
type batch struct {
	index, frames, raw int64
	level0             bool
	offsets            []uint64 // the scan, copied out of pinned memory when its bytes are fetched
	total              uint64
	groups             []group
	reduced, leveled   int64 // bytes the reductions read, bytes of level rows emitted
}

// group is the chunk rows one level emitted with a batch.
type group struct {
	level     *level
	row, rows int64
	frames    int64
	bk        *batchKernels
	offsets   []uint64
	total     uint64
}

const (
	stageH2D = iota
	stageScatter
	stageDownsample
	stageLevels
	stageCompress // the GPU zstd encoder
	stageAggregate
	stageD2H
	stages
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
		chunk: p.ChunkBytes(p.Levels[0]), shapes: make(map[int64]*batchKernels), pyr: pyramid.New(p)}
	if int64(full.InBytes) != p.EpochBytes() || full.Epochs != 1 || full.NChunks != uint64(len(e.ll.Coords)) {
		return nil, fmt.Errorf("GPU layout of %d bytes in %d chunks disagrees with the plan's epoch of %d bytes in %d chunks",
			full.InBytes, full.NChunks, p.EpochBytes(), len(e.ll.Coords))
	}
	if err := e.planLevels(); err != nil {
		return nil, err
	}
	fail := func(err error) (*Engine, error) {
		e.closeCompressors()
		return nil, err
	}
	switch enc := p.Options.ZstdEncoder; {
	case codec != "zstd":
	case enc == pipeline.EncoderDefault || enc == pipeline.EncoderLit:
		if e.chunk >= litMaxChunk {
			return fail(fmt.Errorf("chunks of %s: the GPU zstd encoder takes at most %s (use --zstd-encoder klauspost)",
				pipeline.FormatBytes(e.chunk), pipeline.FormatBytes(litMaxChunk-1)))
		}
		e.gpuZstd = true
		e.litOpt = zstdlit.Options{Checksum: p.Options.ZstdChecksum}
	default:
		if e.comp, err = pipeline.NewCompressor(p, e.chunk, len(e.ll.Coords), "chunk view"); err != nil {
			return fail(err)
		}
		e.zero = make([]byte, e.chunk)
		for _, lv := range e.levels[1:] {
			if lv.comp, err = pipeline.NewCompressor(p, lv.chunk, len(lv.ll.Coords), "chunk view"); err != nil {
				return fail(err)
			}
			lv.zero = make([]byte, lv.chunk)
		}
	}
	if err := dev.do(e.allocate); err != nil {
		_ = dev.do(e.free)
		return fail(fmt.Errorf("GPU %d: %w", dev.Info.Ordinal, err))
	}
	return e, nil
}

// planLevels lays out every pyramid level's reduction and buffers.
func (e *Engine) planLevels() error {
	p := e.plan
	m := p.Manifest
	e.levels = make([]*level, len(p.Levels))
	if len(p.Levels) < 2 {
		return nil
	}
	kind, err := layout.Kind(m.DType)
	if err != nil {
		return fmt.Errorf("%v: %w", err, ErrUnsupported)
	}
	method := ""
	if m.Multiscale != nil {
		method = m.Multiscale.Method
	}
	meth, err := layout.Method(method)
	if err != nil {
		return fmt.Errorf("%v: %w", err, ErrUnsupported)
	}
	frameBytes := func(l int) int64 {
		n := int64(p.Elem)
		for _, s := range p.Levels[l].Grid.Shape[1:] {
			n *= s
		}
		return n
	}
	for l := 1; l < len(p.Levels); l++ {
		g := p.Levels[l].Grid
		half := make([]bool, g.Rank()-1)
		for d := range half {
			half[d] = m.Dimensions[d+1].Downsampled()
		}
		red, err := layout.NewReduce(p.Levels[l-1].Grid.Shape[1:], g.Shape[1:], half, p.Elem, kind, meth, m.ByteOrder == "big")
		if err != nil {
			return err
		}
		lv := &level{index: l, ll: pipeline.NewRowLayout(g), frameBytes: frameBytes(l), inFrame: frameBytes(l - 1),
			chunk: p.ChunkBytes(p.Levels[l]), maxFrames: e.pyr.MaxRows(l) * e.pyr.RowCap(l), red: red,
			shapes: make(map[int64]*batchKernels)}
		if int64(red.OutFrame) != lv.frameBytes || int64(red.InFrame) != lv.inFrame {
			return fmt.Errorf("level %d: reduce of %d-byte frames into %d disagrees with the plan's %d into %d",
				l, red.InFrame, red.OutFrame, lv.inFrame, lv.frameBytes)
		}
		e.levels[l] = lv
	}
	return nil
}

// allocate takes the engine's device and pinned memory, streams and
// events. On the device goroutine.
func (e *Engine) allocate() error {
	in, out, keys := int64(e.full.InBytes), e.outBytes(e.full, e.chunk), int64(e.full.Keys)
	chunks := int64(e.full.NChunks)
	// The layout, flags, keys and sizes serve level 0 and every level's
	// emissions: the largest of them sizes each.
	layoutBytes, flagChunks, sizeKeys := int64(e.full.OutBytes()), chunks, keys
	need := 2*in + 2*out + 2*8*(keys+1)
	levelOut := make([]*layout.Params, len(e.levels))
	for _, lv := range e.levels[1:] {
		lp, err := layout.New(e.plan.Levels[lv.index].Grid, lv.maxFrames, e.plan.Elem)
		if err != nil {
			return fmt.Errorf("level %d: %w", lv.index, err)
		}
		levelOut[lv.index] = lp
		layoutBytes = max(layoutBytes, int64(lp.OutBytes()))
		flagChunks = max(flagChunks, int64(lp.NChunks))
		sizeKeys = max(sizeKeys, int64(lp.Keys))
		need += e.pyr.Capacity(lv.index)*lv.frameBytes + lv.inFrame + 2*e.outBytes(lp, lv.chunk) + 2*8*int64(lp.Keys+1)
	}
	need += layoutBytes + 4*flagChunks + 8*flagChunks + 8*sizeKeys
	// Level chunks are never larger than level 0's (same shape, clamped).
	if e.gpuZstd {
		need += litScratchBytes(e.chunk, flagChunks)
	}
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
		alloc(&e.dLayout, layoutBytes), alloc(&e.dFlags, 4*flagChunks), alloc(&e.dKeyOf, 8*flagChunks), alloc(&e.dSizes, 8*sizeKeys),
	} {
		if step != nil {
			return step
		}
	}
	for _, lv := range e.levels[1:] {
		lp := levelOut[lv.index]
		lo, lk := e.outBytes(lp, lv.chunk), int64(lp.Keys)
		steps := []error{alloc(&lv.dRows, e.pyr.Capacity(lv.index)*lv.frameBytes), alloc(&lv.dPending, lv.inFrame)}
		for b := range 2 {
			steps = append(steps, alloc(&lv.dOut[b], lo), alloc(&lv.dOffsets[b], 8*(lk+1)),
				pinned(&lv.hOut[b], lo), pinned(&lv.hOffsets[b], 8*(lk+1)))
		}
		for _, step := range steps {
			if step != nil {
				return fmt.Errorf("level %d: %w", lv.index, step)
			}
		}
		var err error
		if lv.rk, err = e.dev.prepareReduce(lv.red); err != nil {
			return fmt.Errorf("level %d: %w", lv.index, err)
		}
	}
	var err error
	if e.gpuZstd {
		if e.lit, err = allocLit(e.chunk, flagChunks, e.litOpt); err != nil {
			return err
		}
	}
	for _, s := range []*cu.Stream{&e.h2d, &e.compute, &e.d2h} {
		if *s, err = cu.MakeStream(cu.NonBlocking); err != nil {
			return fmt.Errorf("create stream: %w", err)
		}
	}
	for i := range e.ev {
		for _, x := range e.ev[i].all() {
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

// outBytes is the size of an output buffer for a batch of layout lp:
// its chunks, or their largest frames when the GPU encodes.
func (e *Engine) outBytes(lp *layout.Params, chunk int64) int64 {
	if e.gpuZstd {
		return int64(lp.NChunks) * LitFrameBound(chunk, e.litOpt)
	}
	return int64(lp.OutBytes())
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
		for _, x := range e.ev[i].all() {
			if *x != (cu.Event{}) {
				errs = append(errs, cu.DestroyEvent(x))
			}
		}
	}
	ptrs := []*cu.DevicePtr{&e.dLayout, &e.dFlags, &e.dKeyOf, &e.dSizes}
	hosts := []*[]byte{}
	for b := range 2 {
		ptrs = append(ptrs, &e.dIn[b], &e.dOut[b], &e.dOffsets[b])
		hosts = append(hosts, &e.staging[b], &e.hOut[b], &e.hOffsets[b])
	}
	for _, bk := range e.shapes {
		ptrs = append(ptrs, &bk.dParams)
	}
	for _, lv := range e.levels[1:] {
		ptrs = append(ptrs, &lv.dRows, &lv.dPending)
		for b := range 2 {
			ptrs = append(ptrs, &lv.dOut[b], &lv.dOffsets[b])
			hosts = append(hosts, &lv.hOut[b], &lv.hOffsets[b])
		}
		for _, bk := range lv.shapes {
			ptrs = append(ptrs, &bk.dParams)
		}
		if lv.rk != nil {
			ptrs = append(ptrs, &lv.rk.dParams)
		}
	}
	for _, h := range hosts {
		errs = append(errs, hostFree(*h))
		*h = nil
	}
	if e.lit != nil {
		e.lit.free()
		e.lit = nil
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

// Encode queues epoch ep and hands out the chunk rows of the epoch queued
// two calls ago: its level-0 row and the pyramid rows it completed.
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
	ops := e.pyr.Epoch(ep.Index, ep.Frames)
	if err := e.dev.do(func() error { return e.submit(n, &ep, ops) }); err != nil {
		return nil, e.fail(fmt.Errorf("epoch %d: %w", ep.Index, err))
	}
	e.next++
	var outs []pipeline.LevelOutput
	if n >= 2 {
		var err error
		if outs, err = e.collect(ctx, n-2, nil); err != nil {
			return nil, e.fail(err)
		}
	}
	// The reader refills ep.Data as soon as Encode returns.
	if err := e.dev.do(func() error { return e.ev[n&3].h2dEnd.Synchronize() }); err != nil {
		return nil, e.fail(fmt.Errorf("epoch %d: copy to GPU: %w", ep.Index, err))
	}
	return outs, nil
}

// Flush hands out the epochs still in flight and, at the end of data, the
// pyramid's last frames: each z-stack level's unpaired frame reduced
// alone, and every partial row. The engine can take a new stream of
// epochs afterwards.
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
		var err error
		if outs, err = e.collect(ctx, m, outs); err != nil {
			return nil, e.fail(err)
		}
		if e.comp != nil && m < n-1 {
			// The next collect reuses the compressors' buffers.
			detachAll(outs)
		}
	}
	if ops := e.pyr.Flush(); len(ops) > 0 {
		// The last pyramid rows come back through the buffers of batch
		// n−2 and the level compressors: what was handed out from them
		// needs memory of its own.
		detachAll(outs)
		err := e.dev.do(func() error {
			if err := e.submit(n, nil, ops); err != nil {
				return err
			}
			return e.fetch(n)
		})
		if err == nil {
			outs, err = e.collect(ctx, n, outs)
		}
		if err != nil {
			return nil, e.fail(fmt.Errorf("flush: pyramid: %w", err))
		}
	}
	e.next = 0
	return outs, nil
}

func (e *Engine) fail(err error) error {
	e.err = err
	return err
}

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

// fetch waits for batch m's sizes and queues the copy back of exactly the
// bytes they add up to, level 0's and each pyramid group's. On the device
// goroutine.
func (e *Engine) fetch(m int64) error {
	b, ev, bt := m&1, &e.ev[m&3], &e.inflight[m&3]
	if err := ev.metaEnd.Synchronize(); err != nil {
		return fmt.Errorf("copy sizes back: %w", err)
	}
	if bt.level0 {
		copy(bt.offsets, unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(e.hOffsets[b]))), len(bt.offsets)))
		bt.total = bt.offsets[len(bt.offsets)-1]
		if bt.total > uint64(len(e.hOut[b])) || (!e.gpuZstd && bt.total%uint64(e.chunk) != 0) {
			return fmt.Errorf("the GPU counted %d bytes of chunks of %d bytes, at most %d fit", bt.total, e.chunk, len(e.hOut[b]))
		}
	}
	for i := range bt.groups {
		gr := &bt.groups[i]
		lv := gr.level
		keys := int(gr.bk.p.Keys + 1)
		gr.offsets = append(gr.offsets[:0], unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(lv.hOffsets[b]))), keys)...)
		gr.total = gr.offsets[keys-1]
		if gr.total > uint64(len(lv.hOut[b])) || (!e.gpuZstd && gr.total%uint64(lv.chunk) != 0) {
			return fmt.Errorf("level %d: the GPU counted %d bytes of chunks of %d bytes, at most %d fit", lv.index, gr.total, lv.chunk, len(lv.hOut[b]))
		}
	}
	if err := ev.bytesStart.Record(e.d2h); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if bt.level0 && bt.total > 0 {
		if err := cu.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(e.hOut[b])), e.dOut[b], int64(bt.total), e.d2h); err != nil {
			return fmt.Errorf("copy chunks back: %w", err)
		}
	}
	for _, gr := range bt.groups {
		if gr.total > 0 {
			if err := cu.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(gr.level.hOut[b])), gr.level.dOut[b], int64(gr.total), e.d2h); err != nil {
				return fmt.Errorf("level %d: copy chunks back: %w", gr.level.index, err)
			}
		}
	}
	if err := ev.bytesEnd.Record(e.d2h); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// collect waits for batch m's bytes, books its stage times and appends
// its chunk rows to outs: level 0's, then each level's.
func (e *Engine) collect(ctx context.Context, m int64, outs []pipeline.LevelOutput) ([]pipeline.LevelOutput, error) {
	b, ev, bt := m&1, &e.ev[m&3], &e.inflight[m&3]
	var ms [stages]float64
	err := e.dev.do(func() error {
		if err := ev.bytesEnd.Synchronize(); err != nil {
			return fmt.Errorf("copy chunks back: %w", err)
		}
		pairs := [stages][2]*cu.Event{
			stageDownsample: {&ev.aggEnd, &ev.reduceEnd},
			stageLevels:     {&ev.reduceEnd, &ev.levelsEnd},
			stageD2H:        {&ev.metaStart, &ev.metaEnd},
		}
		if bt.level0 {
			pairs[stageH2D] = [2]*cu.Event{&ev.h2dStart, &ev.h2dEnd}
			pairs[stageScatter] = [2]*cu.Event{&ev.scatterStart, &ev.scatterEnd}
			pairs[stageAggregate] = [2]*cu.Event{&ev.scatterEnd, &ev.aggEnd}
			if e.gpuZstd {
				// Keys, then the encoder (whose scan and write stand in
				// for the aggregate's): compress is from compStart on.
				pairs[stageAggregate] = [2]*cu.Event{&ev.scatterEnd, &ev.compStart}
				pairs[stageCompress] = [2]*cu.Event{&ev.compStart, &ev.aggEnd}
			}
		}
		for i, p := range pairs {
			if p[0] == nil {
				continue
			}
			t, err := p[0].Elapsed(*p[1])
			if err != nil {
				return fmt.Errorf("stage timing: %w", err)
			}
			ms[i] = t
		}
		t, err := ev.bytesStart.Elapsed(ev.bytesEnd)
		ms[stageD2H] += t
		if err == nil && e.lit != nil {
			err = e.lit.check()
		}
		return err
	})
	what := fmt.Sprintf("epoch %d", bt.index)
	if !bt.level0 {
		what = "end of data"
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var back int64
	if bt.level0 {
		back = int64(bt.total) + int64(len(e.hOffsets[b]))
	}
	for _, gr := range bt.groups {
		back += int64(gr.total) + 8*int64(len(gr.offsets))
	}
	var bytes [stages]int64
	bytes[stageH2D], bytes[stageScatter], bytes[stageAggregate] = bt.raw, bt.raw, int64(bt.total)
	if e.gpuZstd && bt.level0 {
		bytes[stageCompress] = bt.raw
	}
	bytes[stageDownsample], bytes[stageLevels], bytes[stageD2H] = bt.reduced, bt.leveled, back
	e.mu.Lock()
	for i := range stages {
		if bytes[i] > 0 || ms[i] > 0 {
			e.meters[i].add(bytes[i], time.Duration(ms[i]*float64(time.Millisecond)))
		}
	}
	e.mu.Unlock()
	if bt.level0 {
		rows, err := e.rows(ctx, 0, e.ll, e.chunk, e.comp, e.zero, bt.index, 1, bt.offsets, e.hOut[b][:bt.total], bt.raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		outs = append(outs, rows...)
	}
	for _, gr := range bt.groups {
		lv := gr.level
		rows, err := e.rows(ctx, lv.index, lv.ll, lv.chunk, lv.comp, lv.zero, gr.row, gr.rows, gr.offsets, lv.hOut[b][:gr.total], gr.frames*lv.frameBytes)
		if err != nil {
			return nil, fmt.Errorf("%s: level %d: %w", what, lv.index, err)
		}
		outs = append(outs, rows...)
	}
	return outs, nil
}

// rows builds chunk rows first…first+n−1 of a level from one batch's
// shard-ordered bytes (keys: inner shard, row within the batch, slot):
// views into pinned memory for codec none, the compressor's output for
// zstd (each row but the last copied out before the next is compressed).
func (e *Engine) rows(ctx context.Context, l int, ll *pipeline.RowLayout, chunk int64, comp *pipeline.Compressor, zero []byte,
	first, n int64, offs []uint64, buf []byte, raw int64) ([]pipeline.LevelOutput, error) {
	key := func(i int, j int64) uint64 {
		return uint64((ll.ShardOf[i]*n+j)*ll.InnerSize + ll.InnerSlot[i])
	}
	bound := uint64(LitFrameBound(chunk, e.litOpt))
	if want := uint64(int64(len(ll.ByShard))*n*ll.InnerSize) + 1; uint64(len(offs)) != want {
		return nil, fmt.Errorf("%d sizes from the GPU, want %d", len(offs), want)
	}
	for j := range n {
		for i := range ll.Coords {
			k := key(i, j)
			s := offs[k+1] - offs[k]
			if e.gpuZstd && s > bound {
				return nil, fmt.Errorf("row %d: the GPU sized chunk %d's frame at %d bytes, more than its bound %d",
					first+j, i, s, bound)
			}
			if !e.gpuZstd && s != 0 && s != uint64(chunk) {
				return nil, fmt.Errorf("row %d: the GPU sized chunk %d at %d bytes, not %d or 0", first+j, i, s, chunk)
			}
		}
	}
	out := make([]pipeline.LevelOutput, 0, n)
	for j := range n {
		view := func(i int) []byte {
			k := key(i, j)
			lo, hi := offs[k], offs[k+1]
			if lo == hi {
				return nil
			}
			return buf[lo:hi:hi]
		}
		if comp == nil {
			out = append(out, ll.Group(l, first+j, view))
			continue
		}
		err := comp.Run(ctx, len(ll.Coords), raw/n, func(i int, _ []byte) []byte {
			if v := view(i); v != nil {
				return v
			}
			return zero
		})
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", first+j, err)
		}
		row := ll.Group(l, first+j, comp.Stored)
		if j < n-1 {
			row = detach(row)
		}
		out = append(out, row)
	}
	return out, nil
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

func detachAll(outs []pipeline.LevelOutput) {
	for i := range outs {
		outs[i] = detach(outs[i])
	}
}

// Stages reports H2D, scatter, downsample and levels (pyramids), compress
// (zstd), aggregate and D2H, timed on the GPU with events (compress on the
// host). Levels is the scatter and aggregate of the pyramid's rows.
func (e *Engine) Stages() []pipeline.Stage {
	e.mu.Lock()
	defer e.mu.Unlock()
	names := [stages]string{"H2D", "scatter", "downsample", "levels", "compress", "aggregate", "D2H"}
	st := func(i int) pipeline.Stage { return e.meters[i].stage(names[i]) }
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
	e.meters = [stages]meter{}
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
	e.closeCompressors()
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
