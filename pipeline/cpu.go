package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/zspool/zspool/zarr"
)

// singleSegmentMax is the largest chunk written as a single-segment frame.
// Single segment forces Frame_Content_Size into every header (klauspost
// leaves it out of small multi-segment frames) and readers are asked to
// support at least 8 MiB of window; bigger chunks use a window descriptor
// and still carry their content size.
const singleSegmentMax = 8 << 20

// CPU is the reference engine: goroutines scatter each chunk of an epoch
// out of the raw bytes and compress it with a worker-owned zstd encoder.
type CPU struct {
	plan    *Plan
	workers []*cpuWorker
	level0  *levelLayout
	outs    [][]byte // one compressed buffer per chunk of the epoch, reused
	absent  []bool   // chunks equal to fill everywhere this epoch
	zero    []byte   // fill-valued chunk, to spot chunks that need no storing
	scatter *meter
	encode  *meter
}

type cpuWorker struct {
	enc *zstd.Encoder
	buf []byte
}

// levelLayout is the per-level bookkeeping that does not change from epoch
// to epoch: each chunk of a chunk row, its shard within the layer and its
// slot apart from the dim-0 part.
type levelLayout struct {
	grid      zarr.Grid
	coords    [][]int64 // chunk coordinates, c[0] = 0
	shardOf   []int64   // inner shard index per chunk
	innerSlot []int64   // slot contribution of dims ≥ 1
	byShard   [][]int   // chunk indices per inner shard, in slot order
	innerSize int64     // Π_{d≥1} p_d
}

func newLevelLayout(g zarr.Grid) *levelLayout {
	r := g.Rank()
	ll := &levelLayout{grid: g, innerSize: 1}
	extent := make([]int64, r)
	shards := make([]int64, r)
	extent[0], shards[0] = 1, 1
	for d := 1; d < r; d++ {
		extent[d] = g.Chunks(d)
		shards[d] = g.Shards(d)
		ll.innerSize *= g.Shard[d]
	}
	ll.byShard = make([][]int, ShardsPerLayer(g))
	_ = zarr.ForEach(extent, func(c []int64) error {
		var shard, slot int64
		for d := 1; d < r; d++ {
			shard = shard*shards[d] + c[d]/g.Shard[d]
			slot = slot*g.Shard[d] + c[d]%g.Shard[d]
		}
		i := len(ll.coords)
		ll.coords = append(ll.coords, append([]int64(nil), c...))
		ll.shardOf = append(ll.shardOf, shard)
		ll.innerSlot = append(ll.innerSlot, slot)
		ll.byShard[shard] = append(ll.byShard[shard], i)
		return nil
	})
	return ll
}

// NewCPU builds the CPU engine for a plan: one encoder and one scatter
// buffer per worker, allocated once.
func NewCPU(p *Plan) (*CPU, error) {
	if len(p.Levels) > 1 {
		return nil, fmt.Errorf("multiscale: %d levels planned, but this build writes level 0 only; drop \"multiscale\" from the manifest", len(p.Levels))
	}
	c := &CPU{plan: p, level0: newLevelLayout(p.Levels[0].Grid)}
	c.scatter, c.encode = newMeter("scatter"), newMeter("compress")
	cb := p.ChunkBytes(p.Levels[0])
	c.zero = make([]byte, cb)
	c.outs = make([][]byte, len(c.level0.coords))
	c.absent = make([]bool, len(c.level0.coords))
	m := p.Manifest
	for range p.Options.Workers {
		w := &cpuWorker{buf: make([]byte, cb)}
		if m.Compression.Codec == "zstd" {
			enc, err := zstd.NewWriter(nil,
				zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(m.Compression.Level)),
				zstd.WithAllLitEntropyCompression(true),
				zstd.WithEncoderConcurrency(1),
				zstd.WithEncoderCRC(false),
				zstd.WithZeroFrames(true),
				zstd.WithSingleSegment(cb <= singleSegmentMax),
			)
			if err != nil {
				return nil, fmt.Errorf("zstd encoder: %w", err)
			}
			w.enc = enc
		}
		c.workers = append(c.workers, w)
	}
	return c, nil
}

// Encode scatters and compresses every chunk of the epoch in parallel, then
// groups the results by shard in slot order.
func (c *CPU) Encode(ctx context.Context, e Epoch) ([]LevelOutput, error) {
	ll := c.level0
	g := ll.grid
	n := len(ll.coords)
	var next atomic.Int64
	var scatterNs, encodeNs atomic.Int64
	var wg sync.WaitGroup
	for _, w := range c.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sNs, eNs int64
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					break
				}
				t0 := time.Now()
				box := g.EpochBox(ll.coords[i], e.Frames, c.plan.Elem)
				if e.Frames < g.Chunk[0] || box.Padded() {
					clear(w.buf)
				}
				box.Scatter(e.Data, w.buf)
				t1 := time.Now()
				c.absent[i] = bytes.Equal(w.buf, c.zero)
				switch {
				case c.absent[i]:
				case w.enc != nil:
					c.outs[i] = w.enc.EncodeAll(w.buf, c.outs[i][:0])
				default:
					c.outs[i] = append(c.outs[i][:0], w.buf...)
				}
				t2 := time.Now()
				sNs += int64(t1.Sub(t0))
				eNs += int64(t2.Sub(t1))
			}
			scatterNs.Add(sNs)
			encodeNs.Add(eNs)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Busy time is the workers' summed time spread over the workers: the
	// wall time the stage would take alone.
	nw := int64(len(c.workers))
	raw := int64(len(e.Data))
	c.scatter.Add(raw, time.Duration(scatterNs.Load()/nw))
	c.encode.Add(raw, time.Duration(encodeNs.Load()/nw))
	return []LevelOutput{c.group(ll, 0, e.Index)}, nil
}

func (c *CPU) group(ll *levelLayout, level int, epoch int64) LevelOutput {
	w0 := epoch % ll.grid.Shard[0]
	out := LevelOutput{Level: level, Epoch: epoch, Shards: make([]ShardOut, len(ll.byShard))}
	for s, idx := range ll.byShard {
		so := ShardOut{Inner: int64(s), Chunks: make([]ChunkOut, len(idx))}
		for j, i := range idx {
			so.Chunks[j] = ChunkOut{Slot: w0*ll.innerSize + ll.innerSlot[i], Data: c.outs[i]}
			if c.absent[i] {
				so.Chunks[j].Data = nil
			}
		}
		out.Shards[s] = so
	}
	return out
}

// Flush has nothing to emit: level 0 only holds whole epochs.
func (c *CPU) Flush(context.Context) ([]LevelOutput, error) { return nil, nil }

// Stages reports scatter and compress.
func (c *CPU) Stages() []Stage { return []Stage{c.scatter.Snapshot(), c.encode.Snapshot()} }

// Close releases the encoders.
func (c *CPU) Close() error {
	for _, w := range c.workers {
		if w.enc != nil {
			w.enc.Close()
		}
	}
	return nil
}
