package pipeline

import (
	"context"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/zspool/zspool/zarr"
)

// Assembler builds shard objects front to back: chunk bytes as each chunk
// row arrives, then the index and its crc32c once the shard layer's last
// chunk row is in. Every shard of a layer is written, even one whose chunks
// are all absent, so a dataset's object list follows from its shape alone.
//
// The store works beside the engine. Every open shard has a writer
// goroutine; Add copies a row's chunks into a queue (bounded by
// StorePlan.QueueBytes), or queues them as they are where the engine lends
// them (StorePlan.LentRows), and returns, so the engine encodes the next epoch
// while the store takes this one, and the shards of a layer — and of the
// layers after it, up to StorePlan.LayersInFlight per level — are written
// side by side. LayerDone records layers in order, each once its shards
// are committed and the level's previous layer is recorded, so what the
// journal counts is always stored and visible. On a store whose writers
// are Sealers, a layer's shards are sealed (every byte uploaded) first and
// the seals recorded in order (Sealed); the commits, which only make
// sealed bytes visible, then run side by side across layers, and a crash
// leaves seals a restart can finish rather than layers to redo. With no
// queue the rows are written by Add itself, and only the commits overlap.
type Assembler struct {
	sink   Sink
	root   string // "<name>.ome.zarr"
	levels []*levelShards
	// LayerDone, when set, is called after every shard of a layer is
	// committed, layer after layer of each level: the point a journal
	// records. Calls never overlap.
	LayerDone func(level int, layer int64) error
	// Sealed, when set, records a layer's sealed shards (none, on a store
	// that does not seal), layer after layer of each level, as soon as
	// they are sealed; their commits start only once it returns nil, and
	// then run to the end even if the assembler fails meanwhile (the
	// record vouches for them). Committed is told once they are visible
	// and LayerDone has covered them. Calls never overlap with each other
	// or with LayerDone.
	Sealed    func(level int, layer int64, objs []SealedObject) error
	Committed func(objs []SealedObject)

	ctx     context.Context // the writers'; cancelled by Abort and by the first failure
	cancel  context.CancelFunc
	blocks  *blockPool    // the queue's memory for copies
	lend    bool          // rows are lent, not copied (StorePlan.LentRows)
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
}

type levelShards struct {
	level  Level
	layer  int64 // layer whose shards are open, -1 before the first
	shards []*openShard
	// prev is closed once the level's last finished layer is recorded
	// by LayerDone; the next layer's record (and its plain commits) wait
	// for it.
	prev chan struct{}
	// prevSealed is closed once the level's last finished layer's seals
	// are recorded; the next layer's seals wait for it.
	prevSealed chan struct{}
	// recorded is closed once the open layer's seals are recorded: its
	// sealed shards may then commit.
	recorded chan struct{}
	// slots bounds the layers that hold memory: open, or writing and
	// sealing. A layer gives its slot back once every shard is sealed (or
	// committed); pending bounds the layers not yet recorded, those
	// waiting for their commits or for an earlier layer included.
	slots   chan struct{}
	pending chan struct{}
}

// pendingPerSlot is how many layers may wait for their commit and record
// per layer in flight. A sealed layer holds no buffer, only its open
// uploads; letting the next one start while it completes keeps the link
// busy where a slow layer would otherwise hold up those behind it.
const pendingPerSlot = 4

type openShard struct {
	key     string
	w       ObjectWriter
	entries []zarr.Entry
	off     uint64
	queue   chan piece // copies of its chunk rows, then its index; closed at the layer's end or on abort
	// sealed is the writer's first outcome: the shard sealed, committed
	// (obj nil) or failed. result is a sealed shard's commit, once.
	sealed chan sealOutcome
	result chan error
	closed bool // queue closed
}

type sealOutcome struct {
	obj *SealedObject
	err error
}

func (sh *openShard) close() {
	if !sh.closed {
		sh.closed = true
		close(sh.queue)
	}
}

// piece is bytes queued for a shard writer, n bytes in all: a row's copy
// in blocks of the queue's pool, or its chunks as the engine lent them
// (released once written), or an index (not from the pool: it is small
// and comes last).
type piece struct {
	blocks [][]byte
	chunks []ChunkOut
	lease  *Lease
	n      int
	index  []byte
}

// StorePlan is how the assembler feeds the store, as the planner sized it
// to the memory budget.
type StorePlan struct {
	// LayersInFlight is how many shard layers of one level may be open
	// or sealing at once: 1 lets a layer's commit overlap the next
	// layer's encoding, more lets their writes overlap too. Sealed
	// layers, which hold no buffers, wait for their commits and records
	// beside them (pendingPerSlot).
	LayersInFlight int
	// QueueBytes bounds the copies of chunk rows waiting for the shard
	// writers; 0 writes each row from Add, with nothing queued.
	QueueBytes int64
	// LentRows, when set, is how many rows of compressed chunks of each
	// level the CPU engine lends the writers (LevelOutput.Lease) in place
	// of copies: QueueBytes is then those rows' bytes, and every output
	// must come with a lease.
	LentRows int
}

// Queue says what the store's queue holds, for the plan's printouts.
func (s StorePlan) Queue() string {
	if s.LentRows > 0 {
		return fmt.Sprintf("%s (%d lent rows a level)", FormatBytes(s.QueueBytes), s.LentRows)
	}
	return FormatBytes(s.QueueBytes)
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
	if p.Store.LentRows > 0 {
		a.lend = true
	} else if q := p.Store.QueueBytes; q > 0 {
		a.blocks = newBlockPool(int(q / blockSize))
	}
	layers := max(1, p.Store.LayersInFlight)
	for _, l := range p.Levels {
		ls := &levelShards{level: l, layer: -1, prev: make(chan struct{}), prevSealed: make(chan struct{}),
			slots: make(chan struct{}, layers), pending: make(chan struct{}, pendingPerSlot*layers)}
		close(ls.prev)
		close(ls.prevSealed)
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
	if out.Lease != nil {
		defer out.Lease.Release() // the writers hold it as long as they need
	}
	if err := a.failed(); err != nil {
		return err
	}
	if a.lend && out.Lease == nil {
		// Written here, it could overtake the lent rows queued before it.
		return fmt.Errorf("level %d: chunk row %d came without a lease to a store that queues lent rows", out.Level, out.Epoch)
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
		if err := a.send(ctx, sh, so.Chunks, size, out.Lease); err != nil {
			return err
		}
	}
	a.assemble.Add(n, time.Since(start))
	if out.Epoch == g.Chunks(0)-1 || out.Epoch%g.Shard[0] == g.Shard[0]-1 {
		return a.finish(ls)
	}
	return nil
}

// send hands a row's chunks of one shard to its writer: lent, or a copy
// through the queue, or, with no queue, written here.
func (a *Assembler) send(ctx context.Context, sh *openShard, chunks []ChunkOut, size int, lease *Lease) error {
	if a.lend {
		lease.Hold()
		return a.queue(ctx, sh, piece{chunks: chunks, n: size, lease: lease})
	}
	if a.blocks == nil {
		if err := writePiece(sh.w, piece{chunks: chunks, n: size}); err != nil {
			return fmt.Errorf("shard %s: %w", sh.key, err)
		}
		a.store.Add(int64(size), 0)
		return nil
	}
	blocks := make([][]byte, (size+blockSize-1)/blockSize)
	if len(blocks) > a.blocks.max {
		// The planner sizes the queue to hold the largest row; a piece
		// that does not fit could never be queued.
		return fmt.Errorf("shard %s: a row of %d bytes is larger than the store queue of %d blocks", sh.key, size, a.blocks.max)
	}
	for i := range blocks {
		b, err := a.blocks.get(a.ctx)
		if err != nil {
			a.blocks.put(blocks[:i]...)
			return a.stopped(err)
		}
		blocks[i] = b
	}
	copyRow(blocks, chunks, size)
	return a.queue(ctx, sh, piece{blocks: blocks, n: size})
}

// queue puts a row's piece in its shard's queue, or, when the run stops
// first, gives its memory back.
func (a *Assembler) queue(ctx context.Context, sh *openShard, pc piece) error {
	select {
	case sh.queue <- pc:
		return nil
	case <-a.ctx.Done():
		a.putBack(pc)
		return a.stopped(a.ctx.Err())
	case <-ctx.Done():
		a.putBack(pc)
		return ctx.Err()
	}
}

// putBack gives a row piece's memory back: the blocks to the pool, or
// the engine's lent bytes to the engine.
func (a *Assembler) putBack(pc piece) {
	switch {
	case pc.lease != nil:
		pc.lease.Release()
	case a.blocks != nil:
		a.blocks.put(pc.blocks...)
	}
}

// queued says rows go to the shard writers through their queues, so an
// index must follow them there; else Add writes rows as they come.
func (a *Assembler) queued() bool { return a.lend || a.blocks != nil }

// stopped is the error to return when the writers' context ended: the
// failure that ended it, if any.
func (a *Assembler) stopped(err error) error {
	if f := a.failed(); f != nil {
		return f
	}
	return err
}

func (a *Assembler) open(ctx context.Context, ls *levelShards, layer int64) error {
	for _, sem := range []chan struct{}{ls.pending, ls.slots} {
		select {
		case sem <- struct{}{}:
		case <-a.ctx.Done():
			return a.stopped(a.ctx.Err())
		case <-ctx.Done():
			return ctx.Err()
		}
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
	ls.recorded = make(chan struct{})
	gate, recorded := ls.prev, ls.recorded
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
		sh := &openShard{key: key, w: w, entries: entries, queue: make(chan piece, writerQueue), sealed: make(chan sealOutcome, 1), result: make(chan error, 1)}
		ls.shards = append(ls.shards, sh)
		a.mu.Lock()
		a.inFlight++
		a.peak = max(a.peak, a.inFlight)
		a.mu.Unlock()
		a.wg.Add(1)
		go a.write(sh, gate, recorded)
		return nil
	})
}

// finish queues each shard's index and closes its queue, then leaves the
// layer's commit to a goroutine that records it once every shard of it is
// committed.
func (a *Assembler) finish(ls *levelShards) error {
	var size int64
	for _, sh := range ls.shards {
		index := zarr.AppendIndex(nil, sh.entries)
		sh.entries = nil // a layer waiting for its record holds no index
		sh.off += uint64(len(index))
		size += int64(sh.off)
		if !a.queued() {
			if _, err := sh.w.Write(index); err != nil {
				return fmt.Errorf("shard %s: index: %w", sh.key, err)
			}
		} else {
			select {
			case sh.queue <- piece{index: index}:
			case <-a.ctx.Done():
				return a.stopped(a.ctx.Err())
			}
		}
		sh.close()
	}
	shards, level, layer := ls.shards, ls.level.Index, ls.layer
	lr := layerRecord{level: level, layer: layer, size: size,
		sealGate: ls.prevSealed, gate: ls.prev, recorded: ls.recorded, slots: ls.slots,
		sealed: make(chan struct{}), done: make(chan struct{})}
	ls.prevSealed, ls.prev = lr.sealed, lr.done
	ls.shards = nil
	ls.layer = -1
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer func() { <-ls.pending }()
		if err := a.record(shards, lr); err != nil {
			a.fail(err)
		}
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
