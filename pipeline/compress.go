package pipeline

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/zspool/zspool/zstdlit"
)

// singleSegmentMax is the largest chunk written as a single-segment frame.
// Single segment forces Frame_Content_Size into every header (klauspost
// leaves it out of small multi-segment frames) and readers are asked to
// support at least 8 MiB of window; bigger chunks use a window descriptor
// and still carry their content size.
const singleSegmentMax = 8 << 20

// Compressor turns the chunks of one chunk row into stored bytes on
// GOMAXPROCS-style workers, each owning its zstd encoder (klauspost, or one
// of zstdlit's, as Plan.HostZstdEncoder says) and scratch buffer.
// Engines differ in where chunk bytes come from (the CPU engine scatters
// them; the GPU engine hands over its chunk-layout buffer); the encoding
// and the fill-chunk rule are this one code path.
type Compressor struct {
	workers []*compressWorker
	zero    []byte   // a fill-valued chunk
	outs    [][]byte // per chunk of the row, reused
	absent  []bool   // chunks equal to fill everywhere
	fill    *Meter   // time spent producing chunk bytes (the CPU scatter)
	encode  *Meter
	// order is the order chunks are handed out in: longest first, by
	// what each took in the last row (cost). The row ends when its last
	// chunk does, so a long chunk handed out last keeps every other
	// worker waiting; the same chunk of the next row is of the same part
	// of the field of view, and about as long.
	order []int
	cost  []int64
}

type compressWorker struct {
	// encode appends a chunk's stored frame to dst; nil without a codec,
	// when chunks are stored as they are.
	encode  func(dst, src []byte) []byte
	enc     *zstd.Encoder // klauspost's, closed with the compressor; else nil
	scratch []byte
}

// NewCompressor makes workers for chunks of chunkBytes, n chunks a row.
func NewCompressor(p *Plan, chunkBytes int64, n int, fillStage string) (*Compressor, error) {
	c := &Compressor{zero: make([]byte, chunkBytes), outs: make([][]byte, n), absent: make([]bool, n),
		fill: NewMeter(fillStage), encode: NewMeter("compress"), order: make([]int, n), cost: make([]int64, n)}
	for i := range c.order {
		c.order[i] = i
	}
	// NewPlan checked this already; a Plan made some other way must not
	// fall through to klauspost with a misspelt encoder.
	if err := CheckZstdEncoder(p.Options.ZstdEncoder); err != nil {
		return nil, fmt.Errorf("zstd_encoder: %w", err)
	}
	m := p.Manifest
	for range p.Options.Workers {
		w := &compressWorker{scratch: make([]byte, chunkBytes)}
		// zstdlit's encoders keep their tables in pools of their own, and
		// write Frame_Content_Size into every frame and single-segment
		// frames up to 8 MiB, as singleSegmentMax asks (so a windowed
		// match may reach anywhere in the chunk).
		switch enc := CanonicalZstdEncoder(p.HostZstdEncoder()); {
		case m.Compression.Codec != "zstd":
		case enc == EncoderWindow:
			opt := p.WindowOptions()
			w.encode = func(dst, src []byte) []byte { return zstdlit.EncodeWindow(dst, src, opt) }
		case enc == EncoderSegmented:
			opt := p.SegmentedOptions()
			w.encode = func(dst, src []byte) []byte { return zstdlit.Encode(dst, src, opt) }
		default:
			enc, err := zstd.NewWriter(nil,
				zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(m.Compression.Level)),
				zstd.WithAllLitEntropyCompression(true),
				zstd.WithEncoderConcurrency(1),
				zstd.WithEncoderCRC(p.Options.ZstdChecksum),
				zstd.WithZeroFrames(true),
				zstd.WithSingleSegment(chunkBytes <= singleSegmentMax),
			)
			if err != nil {
				return nil, fmt.Errorf("zstd encoder: %w", err)
			}
			w.enc = enc
			w.encode = func(dst, src []byte) []byte { return enc.EncodeAll(src, dst) }
		}
		c.workers = append(c.workers, w)
	}
	return c, nil
}

// Run stores chunks 0…n−1: chunk(i, scratch) returns chunk i's padded
// bytes, either written into scratch or a view of the engine's own buffer.
// Results are in Out/Absent until the next Run. rawBytes is what the row
// covers in the input, for the throughput figures.
func (c *Compressor) Run(ctx context.Context, n int, rawBytes int64, chunk func(i int, scratch []byte) []byte) error {
	var next atomic.Int64
	var fillNs, encodeNs atomic.Int64
	var wg sync.WaitGroup
	for _, w := range c.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var fNs, eNs int64
			for {
				k := int(next.Add(1) - 1)
				if k >= n || ctx.Err() != nil {
					break
				}
				i := k
				if n == len(c.order) {
					i = c.order[k]
				}
				t0 := time.Now()
				b := chunk(i, w.scratch)
				t1 := time.Now()
				c.absent[i] = bytes.Equal(b, c.zero)
				switch {
				case c.absent[i]:
				case w.encode != nil:
					c.outs[i] = w.encode(c.outs[i][:0], b)
				default:
					c.outs[i] = append(c.outs[i][:0], b...)
				}
				t2 := time.Now()
				fNs += int64(t1.Sub(t0))
				eNs += int64(t2.Sub(t1))
				if n == len(c.cost) {
					c.cost[i] = int64(t2.Sub(t0))
				}
			}
			fillNs.Add(fNs)
			encodeNs.Add(eNs)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if n == len(c.order) {
		slices.SortStableFunc(c.order, func(a, b int) int { return cmp.Compare(c.cost[b], c.cost[a]) })
	}
	// Busy time is the workers' summed time spread over the workers: the
	// wall time the stage would take alone.
	nw := int64(len(c.workers))
	c.fill.Add(rawBytes, time.Duration(fillNs.Load()/nw))
	c.encode.Add(rawBytes, time.Duration(encodeNs.Load()/nw))
	return nil
}

// Stored is chunk i's stored bytes from the last Run, nil when absent.
func (c *Compressor) Stored(i int) []byte {
	if c.absent[i] {
		return nil
	}
	return c.outs[i]
}

// Stages reports the fill and compress stages.
func (c *Compressor) Stages() []Stage { return []Stage{c.fill.Snapshot(), c.encode.Snapshot()} }

// Close releases the encoders.
func (c *Compressor) Close() {
	for _, w := range c.workers {
		if w.enc != nil {
			w.enc.Close()
		}
	}
}
