//go:build cuda

package kernels

import (
	"context"
	"fmt"
	"sync"

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
	meters [stages]*pipeline.Meter
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

// stageNames name the stages in the order above.
var stageNames = [stages]string{"H2D", "scatter", "downsample", "levels", "compress", "aggregate", "D2H"}

// The engine is an engine, stages its epochs in pinned memory, and names
// its GPU and its copy bandwidth.
var (
	_ pipeline.Engine        = (*Engine)(nil)
	_ pipeline.Stager        = (*Engine)(nil)
	_ pipeline.StageResetter = (*Engine)(nil)
	_ DeviceReporter         = (*Engine)(nil)
	_ CopyMeasurer           = (*Engine)(nil)
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
	for i, name := range stageNames {
		e.meters[i] = pipeline.NewMeter(name)
	}
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
	switch enc := pipeline.CanonicalZstdEncoder(p.Options.ZstdEncoder); {
	case codec != "zstd":
	case !pipeline.OnHost(enc): // its own encoder, or segmented by name
		if e.chunk >= litMaxChunk {
			return fail(fmt.Errorf("chunks of %s: the GPU zstd encoder takes at most %s (use --zstd-encoder window or klauspost)",
				pipeline.FormatBytes(e.chunk), pipeline.FormatBytes(litMaxChunk-1)))
		}
		e.gpuZstd = true
		e.litOpt = p.SegmentedOptions()
	default:
		if e.comp, err = pipeline.NewCompressor(p, e.chunk, len(e.ll.Coords), 1, "chunk view"); err != nil {
			return fail(err)
		}
		e.zero = make([]byte, e.chunk)
		for _, lv := range e.levels[1:] {
			if lv.comp, err = pipeline.NewCompressor(p, lv.chunk, len(lv.ll.Coords), 1, "chunk view"); err != nil {
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
