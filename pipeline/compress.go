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
	zero    []byte // a fill-valued chunk
	fill    *Meter // time spent producing chunk bytes (the CPU scatter)
	encode  *Meter
	// cost is what each chunk took in the last row that ran it. A row
	// ends when its last chunk does, so a long chunk handed out last
	// keeps every other worker waiting: rows are handed out longest
	// first, and the same chunk of the next row, of the same part of the
	// field of view, takes about as long.
	cost []atomic.Int64
	// rows are the rows a compressor holds at once, in flight (Start)
	// or lent to the store (Lend): a row is reused once it is neither,
	// so that rows run one at a time (Run) fill one set of outputs, as
	// the planner counts them. released says a lent row came back. last
	// is the row Run finished last.
	rows     []*Row
	released chan struct{}
	last     *Row

	mu      sync.Mutex
	queue   []task            // chunks of started rows not yet taken, in hand-out order
	idle    []*compressWorker // workers not running
	running sync.WaitGroup    // workers running
}

// Row is one chunk row handed to the compressor by Start.
type Row struct {
	ctx      context.Context
	cancel   context.CancelCauseFunc // a failed chunk's error is the cause
	chunk    func(i int, scratch []byte) []byte
	rawBytes int64
	outs     [][]byte // per chunk, reused by a later Start once waited for and given back
	absent   []bool   // chunks equal to fill everywhere
	order    []int    // the chunks in hand-out order
	inFlight bool     // started and not yet waited for (Compressor.mu)
	lent     bool     // its outputs lent and not yet given back (Compressor.mu)
	left     sync.WaitGroup
	fillNs   atomic.Int64
	encodeNs atomic.Int64
}

type task struct {
	row *Row
	i   int
}

type compressWorker struct {
	// encode appends a chunk's stored frame to dst; nil without a codec,
	// when chunks are stored as they are.
	encode  func(dst, src []byte) []byte
	enc     *zstd.Encoder // klauspost's, closed with the compressor; else nil
	scratch []byte
}

// NewCompressor makes workers for chunks of chunkBytes, n chunks a row,
// holding up to rows rows at once, in flight or lent (at least one). A
// row's outputs grow to what its chunks take, when they are first stored.
func NewCompressor(p *Plan, chunkBytes int64, n, rows int, fillStage string) (*Compressor, error) {
	c := &Compressor{zero: make([]byte, chunkBytes), fill: NewMeter(fillStage), encode: NewMeter("compress"),
		cost: make([]atomic.Int64, n), released: make(chan struct{}, 1)}
	for range max(rows, 1) {
		c.rows = append(c.rows, &Row{outs: make([][]byte, n), absent: make([]bool, n)})
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
	c.idle = slices.Clone(c.workers)
	return c, nil
}

// Run stores chunks 0…n−1 (n at most the row size NewCompressor was
// given): chunk(i, scratch) returns chunk i's padded bytes, either written
// into scratch or a view of the engine's own buffer. Results are in Stored
// until the next Run. rawBytes is what the row covers in the input, for
// the throughput figures.
func (c *Compressor) Run(ctx context.Context, n int, rawBytes int64, chunk func(i int, scratch []byte) []byte) error {
	r, err := c.Start(ctx, n, rawBytes, chunk)
	if err != nil {
		return err
	}
	c.last = r
	return c.Wait(r)
}

// Start hands a row to the workers and returns at once; Wait waits for it.
// Rows in flight queue behind each other, so that workers done with one
// row start on the next instead of waiting for its last chunk. The row's
// results stay valid until a Start after its Wait (after its lease comes
// back, if it was lent), and chunk must stay callable until Wait. With
// every row lent, Start waits for one to come back.
func (c *Compressor) Start(ctx context.Context, n int, rawBytes int64, chunk func(i int, scratch []byte) []byte) (*Row, error) {
	if n > len(c.cost) {
		return nil, fmt.Errorf("compressor: a row of %d chunks, made for rows of %d", n, len(c.cost))
	}
	r, err := c.freeRow(ctx)
	if err != nil {
		return nil, err
	}
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	r.chunk, r.rawBytes = chunk, rawBytes
	r.fillNs.Store(0)
	r.encodeNs.Store(0)
	r.order = r.order[:0]
	for i := range n {
		r.order = append(r.order, i)
	}
	slices.SortStableFunc(r.order, func(a, b int) int { return cmp.Compare(c.cost[b].Load(), c.cost[a].Load()) })
	r.left.Add(n)
	c.mu.Lock()
	for _, i := range r.order {
		c.queue = append(c.queue, task{r, i})
	}
	for len(c.idle) > 0 && len(c.queue) > 0 {
		w := c.idle[len(c.idle)-1]
		c.idle = c.idle[:len(c.idle)-1]
		c.running.Add(1)
		go c.work(w)
	}
	c.mu.Unlock()
	return r, nil
}

// freeRow takes a row neither in flight nor lent, waiting for a lent one
// to come back if need be.
func (c *Compressor) freeRow(ctx context.Context) (*Row, error) {
	for {
		var free *Row
		lent := false
		c.mu.Lock()
		for _, r := range c.rows {
			if r.lent {
				lent = true
			} else if !r.inFlight && free == nil {
				free = r
			}
		}
		if free != nil {
			free.inFlight = true
		}
		c.mu.Unlock()
		if free != nil {
			return free, nil
		}
		if !lent {
			return nil, fmt.Errorf("compressor: a row started with all %d in flight", len(c.rows))
		}
		select {
		case <-c.released:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Lend lends a waited-for row's outputs until the lease's last release;
// Start does not reuse the row before then.
func (c *Compressor) Lend(r *Row) *Lease {
	c.mu.Lock()
	r.lent = true
	c.mu.Unlock()
	return NewLease(func() {
		c.mu.Lock()
		r.lent = false
		c.mu.Unlock()
		select {
		case c.released <- struct{}{}:
		default: // a wake-up is pending already
		}
	})
}

// Wait waits for a started row and reports the error of a chunk that
// failed, or else its context's, if any.
func (c *Compressor) Wait(r *Row) error {
	r.left.Wait()
	c.mu.Lock()
	r.inFlight = false
	c.mu.Unlock()
	defer r.cancel(nil)
	if err := context.Cause(r.ctx); err != nil {
		return err
	}
	// Busy time is the workers' summed time spread over the workers: the
	// wall time the stage would take alone.
	nw := int64(len(c.workers))
	c.fill.Add(r.rawBytes, time.Duration(r.fillNs.Load()/nw))
	c.encode.Add(r.rawBytes, time.Duration(r.encodeNs.Load()/nw))
	return nil
}

// work runs queued chunks until none is left, then goes idle.
func (c *Compressor) work(w *compressWorker) {
	defer c.running.Done()
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.idle = append(c.idle, w)
			c.mu.Unlock()
			return
		}
		t := c.queue[0]
		c.queue = c.queue[1:]
		c.mu.Unlock()
		t.row.compress(c, w, t.i)
		t.row.left.Done()
	}
}

// compress stores chunk i of the row with worker w.
func (r *Row) compress(c *Compressor, w *compressWorker, i int) {
	if r.ctx.Err() != nil {
		return
	}
	t0 := time.Now()
	var b []byte
	// The chunk's bytes may come from a mapped raw file (EpochMapper).
	if err := Guard(func() { b = r.chunk(i, w.scratch) }); err != nil {
		r.cancel(fmt.Errorf("chunk %d: %w", i, err)) // the first cause stays
		return
	}
	t1 := time.Now()
	r.absent[i] = bytes.Equal(b, c.zero)
	switch {
	case r.absent[i]:
	case w.encode != nil:
		r.outs[i] = w.encode(r.outs[i][:0], b)
	default:
		r.outs[i] = append(r.outs[i][:0], b...)
	}
	t2 := time.Now()
	r.fillNs.Add(int64(t1.Sub(t0)))
	r.encodeNs.Add(int64(t2.Sub(t1)))
	c.cost[i].Store(int64(t2.Sub(t0)))
}

// Stored is chunk i's stored bytes in the row, nil when absent.
func (r *Row) Stored(i int) []byte {
	if r.absent[i] {
		return nil
	}
	return r.outs[i]
}

// Stored is chunk i's stored bytes from the last Run, nil when absent.
func (c *Compressor) Stored(i int) []byte { return c.last.Stored(i) }

// Last is the row the last Run stored, to Lend.
func (c *Compressor) Last() *Row { return c.last }

// Stages reports the fill and compress stages.
func (c *Compressor) Stages() []Stage { return []Stage{c.fill.Snapshot(), c.encode.Snapshot()} }

// Close stops the rows in flight, waits for the workers and releases the
// encoders.
func (c *Compressor) Close() {
	for _, r := range c.rows {
		if r.cancel != nil {
			r.cancel(nil)
		}
	}
	c.running.Wait()
	for _, w := range c.workers {
		if w.enc != nil {
			w.enc.Close()
		}
	}
}
