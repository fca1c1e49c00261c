package pipeline

import (
	"context"
	"errors"
	"fmt"
	"path"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/zspool/zspool/zarr"
)

// Assembler builds shard objects front to back: chunk bytes as each chunk
// row arrives, then the index and its crc32c once the shard layer's last
// chunk row is in. Every shard of a layer is written, even one whose chunks
// are all absent, so a dataset's object list follows from its shape alone.
//
// The store works beside the engine. Every open shard has a writer
// goroutine; Add copies a row's chunks into a queue (bounded by
// StorePlan.QueueBytes) and returns, so the engine encodes the next epoch
// while the store takes this one, and the shards of a layer — and of the
// layers after it, up to StorePlan.LayersInFlight per level — are written
// side by side. Commits stay in order: a layer's shards commit only once
// the level's previous layer is committed and recorded by LayerDone, so a
// crash leaves at most one finished layer unrecorded. With no queue the
// rows are written by Add itself, and only the commits overlap.
type Assembler struct {
	sink   Sink
	root   string // "<name>.ome.zarr"
	levels []*levelShards
	// LayerDone, when set, is called after every shard of a layer is
	// committed, layer after layer of each level: the point a journal
	// records. Calls never overlap.
	LayerDone func(level int, layer int64) error

	ctx     context.Context // the writers'; cancelled by Abort and by the first failure
	cancel  context.CancelFunc
	queue   *semaphore.Weighted // bytes of queued copies; nil: rows are written by Add
	queueN  int64
	commits chan struct{} // bounds commits at once across layers
	wg      sync.WaitGroup
	doneMu  sync.Mutex // serialises LayerDone

	mu       sync.Mutex
	err      error // the first failure of a writer or of LayerDone
	written  int64
	inFlight int // shards created and not yet committed or aborted
	peak     int

	assemble *Meter // Add: indexing and copying rows
	store    *Meter // the writers: bytes handed to the store and their time
	bufs     rowBuffers
}

type levelShards struct {
	level  Level
	layer  int64 // layer whose shards are open, -1 before the first
	shards []*openShard
	// prev is closed once the level's last finished layer is committed
	// and recorded; the next layer's commits wait for it.
	prev  chan struct{}
	slots chan struct{} // layers of this level in flight
}

type openShard struct {
	key     string
	w       ObjectWriter
	entries []zarr.Entry
	off     uint64
	queue   chan piece // copies of its chunk rows, then its index; closed at the layer's end or on abort
	result  chan error // the writer's outcome, once
	closed  bool       // queue closed
}

func (sh *openShard) close() {
	if !sh.closed {
		sh.closed = true
		close(sh.queue)
	}
}

// piece is bytes queued for a shard writer, and how much of the queue's
// budget they hold (none for an index: it is small and comes last).
type piece struct {
	b    []byte
	held int64
}

// StorePlan is how the assembler feeds the store, as the planner sized it
// to the memory budget.
type StorePlan struct {
	// LayersInFlight is how many shard layers of one level may be open
	// or committing at once: 1 lets a layer's commit overlap the next
	// layer's encoding, more lets their writes overlap too.
	LayersInFlight int
	// QueueBytes bounds the copies of chunk rows waiting for the shard
	// writers; 0 writes each row from Add, with nothing queued.
	QueueBytes int64
}

// commitConcurrency bounds the shards committed at once: an S3 commit is a
// Complete and a HeadObject round trip, and doing a layer's one after
// another leaves the link idle between them.
const commitConcurrency = 8

// writerQueue is the depth of a shard's queue in rows; the byte budget is
// what bounds memory.
const writerQueue = 64

// NewAssembler prepares shard assembly for every level of a plan.
func NewAssembler(ctx context.Context, p *Plan, sink Sink) *Assembler {
	a := &Assembler{sink: sink, root: p.Root(), commits: make(chan struct{}, commitConcurrency)}
	a.ctx, a.cancel = context.WithCancel(ctx)
	a.assemble = NewMeter("assemble")
	a.store = NewMeter("store")
	if q := p.Store.QueueBytes; q > 0 {
		a.queue, a.queueN = semaphore.NewWeighted(q), q
	}
	layers := max(1, p.Store.LayersInFlight)
	for _, l := range p.Levels {
		ls := &levelShards{level: l, layer: -1, prev: make(chan struct{}), slots: make(chan struct{}, layers)}
		close(ls.prev)
		a.levels = append(a.levels, ls)
	}
	return a
}

// Written is the total size of committed shard objects.
func (a *Assembler) Written() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.written
}

// PeakShards is the most shards that were open or committing at once.
func (a *Assembler) PeakShards() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peak
}

// Stages report the time Add spent on rows, and the writers' time handing
// bytes to the store (summed over writers, so it may exceed the wall
// time).
func (a *Assembler) Stages() []Stage { return []Stage{a.assemble.Snapshot(), a.store.Snapshot()} }

func (a *Assembler) failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *Assembler) fail(err error) {
	a.mu.Lock()
	if a.err == nil {
		a.err = err
	}
	a.mu.Unlock()
	a.cancel()
}

// Add appends one chunk row of a level to its shards, finishing the
// layer's shards when the row is the layer's last.
func (a *Assembler) Add(ctx context.Context, out LevelOutput) error {
	if err := a.failed(); err != nil {
		return err
	}
	ls := a.levels[out.Level]
	g := ls.level.Grid
	layer := out.Epoch / g.Shard[0]
	if layer != ls.layer {
		if ls.layer >= 0 {
			return fmt.Errorf("level %d: chunk row %d arrived before layer %d was finished", out.Level, out.Epoch, ls.layer)
		}
		if err := a.open(ctx, ls, layer); err != nil {
			return err
		}
	}
	start := time.Now()
	var n int64
	for _, so := range out.Shards {
		sh := ls.shards[so.Inner]
		size := 0
		for _, ch := range so.Chunks {
			if ch.Data == nil {
				continue
			}
			sh.entries[ch.Slot] = zarr.Entry{Offset: sh.off, NBytes: uint64(len(ch.Data))}
			sh.off += uint64(len(ch.Data))
			size += len(ch.Data)
		}
		if size == 0 {
			continue
		}
		n += int64(size)
		if err := a.send(ctx, sh, so.Chunks, size); err != nil {
			return err
		}
	}
	a.assemble.Add(n, time.Since(start))
	if out.Epoch == g.Chunks(0)-1 || out.Epoch%g.Shard[0] == g.Shard[0]-1 {
		return a.finish(ls)
	}
	return nil
}

// send hands a row's chunks of one shard to its writer: a copy through the
// queue, or, with no queue, written here.
func (a *Assembler) send(ctx context.Context, sh *openShard, chunks []ChunkOut, size int) error {
	if a.queue == nil {
		for _, ch := range chunks {
			if ch.Data == nil {
				continue
			}
			if _, err := sh.w.Write(ch.Data); err != nil {
				return fmt.Errorf("shard %s: %w", sh.key, err)
			}
		}
		a.store.Add(int64(size), 0)
		return nil
	}
	// A row larger than the whole queue waits for the queue to drain and
	// then takes all of it.
	// A row's copy takes its buffer's size class: that is what it holds.
	held := min(int64(1)<<sizeClass(size), a.queueN)
	if err := a.queue.Acquire(a.ctx, held); err != nil {
		return a.stopped(err)
	}
	buf := a.copyRow(chunks, size)
	select {
	case sh.queue <- piece{buf, held}:
		return nil
	case <-a.ctx.Done():
		a.queue.Release(held)
		return a.stopped(a.ctx.Err())
	case <-ctx.Done():
		a.queue.Release(held)
		return ctx.Err()
	}
}

// copyRow copies a shard's chunks of one row into one buffer, in order; a
// large row is copied by several goroutines, each a run of its chunks.
func (a *Assembler) copyRow(chunks []ChunkOut, size int) []byte {
	buf := a.bufs.get(size)
	const perCopier = 8 << 20
	copiers := min(runtime.GOMAXPROCS(0), size/perCopier, len(chunks))
	if copiers <= 1 {
		off := 0
		for _, ch := range chunks {
			off += copy(buf[off:], ch.Data)
		}
		return buf
	}
	var wg sync.WaitGroup
	per := (len(chunks) + copiers - 1) / copiers
	off := 0
	for first := 0; first < len(chunks); first += per {
		run := chunks[first:min(first+per, len(chunks))]
		start := off
		for _, ch := range run {
			off += len(ch.Data)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := start
			for _, ch := range run {
				o += copy(buf[o:], ch.Data)
			}
		}()
	}
	wg.Wait()
	return buf
}

// rowBuffers recycles row copies by size class (powers of two from 64
// KiB), so that the queue neither zeroes a fresh buffer for every row nor
// leaves the collector garbage at the store's rate. What it keeps is
// within the queue's budget: a buffer is returned only after its bytes
// were released.
type rowBuffers struct {
	pools [48]sync.Pool // *[]byte of cap 1<<class
}

func sizeClass(n int) int {
	c := 16
	for 1<<c < n {
		c++
	}
	return c
}

func (r *rowBuffers) get(n int) []byte {
	c := sizeClass(n)
	if c >= len(r.pools) {
		return make([]byte, n)
	}
	if b, ok := r.pools[c].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<c)
}

func (r *rowBuffers) put(b []byte) {
	c := sizeClass(cap(b))
	if c < len(r.pools) && cap(b) == 1<<c {
		b = b[:0]
		r.pools[c].Put(&b)
	}
}

// stopped is the error to return when the writers' context ended: the
// failure that ended it, if any.
func (a *Assembler) stopped(err error) error {
	if f := a.failed(); f != nil {
		return f
	}
	return err
}

func (a *Assembler) open(ctx context.Context, ls *levelShards, layer int64) error {
	select {
	case ls.slots <- struct{}{}:
	case <-a.ctx.Done():
		return a.stopped(a.ctx.Err())
	case <-ctx.Done():
		return ctx.Err()
	}
	g := ls.level.Grid
	r := g.Rank()
	extent := make([]int64, r)
	extent[0] = 1
	for d := 1; d < r; d++ {
		extent[d] = g.Shards(d)
	}
	ls.layer = layer
	ls.shards = nil
	gate := ls.prev
	return zarr.ForEach(extent, func(inner []int64) error {
		gc := append([]int64{layer}, inner[1:]...)
		key := path.Join(a.root, ls.level.Path, zarr.ShardKey(gc))
		w, err := a.sink.Create(a.ctx, key)
		if err != nil {
			return fmt.Errorf("shard %s: %w", key, err)
		}
		entries := make([]zarr.Entry, g.SlotsPerShard())
		for i := range entries {
			entries[i] = zarr.Entry{Offset: zarr.Absent, NBytes: zarr.Absent}
		}
		sh := &openShard{key: key, w: w, entries: entries, queue: make(chan piece, writerQueue), result: make(chan error, 1)}
		ls.shards = append(ls.shards, sh)
		a.mu.Lock()
		a.inFlight++
		a.peak = max(a.peak, a.inFlight)
		a.mu.Unlock()
		a.wg.Add(1)
		go a.write(sh, gate)
		return nil
	})
}

// write is a shard's writer: its queued rows and index, in order, then —
// once the level's previous layer is recorded — its commit. Anything that
// stops the assembler aborts the shard instead.
func (a *Assembler) write(sh *openShard, gate <-chan struct{}) {
	defer a.wg.Done()
	var err error
	for pc := range sh.queue {
		if err == nil && a.ctx.Err() == nil {
			start := time.Now()
			if _, werr := sh.w.Write(pc.b); werr != nil {
				err = fmt.Errorf("shard %s: %w", sh.key, werr)
			}
			a.store.Add(int64(len(pc.b)), time.Since(start))
		}
		if pc.held > 0 {
			a.queue.Release(pc.held)
			a.bufs.put(pc.b)
		}
	}
	if err == nil {
		select {
		case <-gate:
		case <-a.ctx.Done():
		}
	}
	if err == nil && a.ctx.Err() == nil {
		a.commits <- struct{}{}
		start := time.Now()
		if cerr := sh.w.Commit(); cerr != nil {
			err = fmt.Errorf("shard %s: %w", sh.key, cerr)
		}
		a.store.Add(0, time.Since(start))
		<-a.commits
	} else {
		_ = sh.w.Abort()
		if err == nil {
			err = a.stopped(a.ctx.Err())
		}
	}
	a.mu.Lock()
	a.inFlight--
	a.mu.Unlock()
	sh.result <- err
}

// finish queues each shard's index and closes its queue, then leaves the
// layer's commit to a goroutine that records it once every shard of it is
// committed.
func (a *Assembler) finish(ls *levelShards) error {
	var size int64
	for _, sh := range ls.shards {
		index := zarr.AppendIndex(nil, sh.entries)
		sh.off += uint64(len(index))
		size += int64(sh.off)
		if a.queue == nil {
			if _, err := sh.w.Write(index); err != nil {
				return fmt.Errorf("shard %s: index: %w", sh.key, err)
			}
		} else {
			select {
			case sh.queue <- piece{b: index}:
			case <-a.ctx.Done():
				return a.stopped(a.ctx.Err())
			}
		}
		sh.close()
	}
	shards, level, layer := ls.shards, ls.level.Index, ls.layer
	done := make(chan struct{})
	ls.prev = done
	ls.shards = nil
	ls.layer = -1
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer func() { <-ls.slots }()
		var errs []error
		for _, sh := range shards {
			if err := <-sh.result; err != nil {
				errs = append(errs, err)
			}
		}
		err := errors.Join(errs...)
		if err == nil {
			a.mu.Lock()
			a.written += size
			a.mu.Unlock()
			if a.LayerDone != nil {
				a.doneMu.Lock()
				err = a.LayerDone(level, layer)
				a.doneMu.Unlock()
			}
		}
		if err != nil {
			a.fail(err)
			return
		}
		close(done)
	}()
	return nil
}

// Wait returns once every finished layer is committed and recorded, with
// the first failure.
func (a *Assembler) Wait() error {
	a.wg.Wait()
	return a.failed()
}

// Abort discards every shard not yet committed, after a failure, and waits
// for the writers to stop.
func (a *Assembler) Abort() {
	a.cancel()
	for _, ls := range a.levels {
		for _, sh := range ls.shards {
			sh.close()
		}
		ls.shards = nil
		ls.layer = -1
	}
	a.wg.Wait()
}
