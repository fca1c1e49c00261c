package pipeline

import (
	"context"
	"errors"
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
type Assembler struct {
	sink   Sink
	root   string // "<name>.ome.zarr"
	levels []*levelShards
	// LayerDone, when set, is called after every shard of a layer is
	// committed: the point a journal records.
	LayerDone func(level int, layer int64) error
	written   int64
	assemble  *Meter
}

type levelShards struct {
	level  Level
	layer  int64 // layer whose shards are open, -1 before the first
	shards []*openShard
}

type openShard struct {
	key     string
	w       ObjectWriter
	entries []zarr.Entry
	off     uint64
}

// NewAssembler prepares shard assembly for every level of a plan.
func NewAssembler(p *Plan, sink Sink) *Assembler {
	a := &Assembler{sink: sink, root: p.Root()}
	a.assemble = NewMeter("assemble")
	for _, l := range p.Levels {
		a.levels = append(a.levels, &levelShards{level: l, layer: -1})
	}
	return a
}

// Written is the total size of committed shard objects.
func (a *Assembler) Written() int64 { return a.written }

// Stage reports time spent handing bytes to the sink.
func (a *Assembler) Stage() Stage { return a.assemble.Snapshot() }

// Add appends one chunk row of a level to its shards, committing the
// layer's shards when the row is the layer's last.
func (a *Assembler) Add(ctx context.Context, out LevelOutput) error {
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
	var n int64
	start := time.Now()
	for _, so := range out.Shards {
		sh := ls.shards[so.Inner]
		for _, ch := range so.Chunks {
			if ch.Data == nil {
				continue
			}
			if _, err := sh.w.Write(ch.Data); err != nil {
				return fmt.Errorf("shard %s: %w", sh.key, err)
			}
			sh.entries[ch.Slot] = zarr.Entry{Offset: sh.off, NBytes: uint64(len(ch.Data))}
			sh.off += uint64(len(ch.Data))
			n += int64(len(ch.Data))
		}
	}
	a.assemble.Add(n, time.Since(start))
	last := out.Epoch == g.Chunks(0)-1 || out.Epoch%g.Shard[0] == g.Shard[0]-1
	if last {
		return a.finish(ctx, ls)
	}
	return nil
}

func (a *Assembler) open(ctx context.Context, ls *levelShards, layer int64) error {
	g := ls.level.Grid
	r := g.Rank()
	extent := make([]int64, r)
	extent[0] = 1
	for d := 1; d < r; d++ {
		extent[d] = g.Shards(d)
	}
	ls.layer = layer
	ls.shards = ls.shards[:0]
	return zarr.ForEach(extent, func(inner []int64) error {
		gc := append([]int64{layer}, inner[1:]...)
		key := path.Join(a.root, ls.level.Path, zarr.ShardKey(gc))
		w, err := a.sink.Create(ctx, key)
		if err != nil {
			return fmt.Errorf("shard %s: %w", key, err)
		}
		entries := make([]zarr.Entry, g.SlotsPerShard())
		for i := range entries {
			entries[i] = zarr.Entry{Offset: zarr.Absent, NBytes: zarr.Absent}
		}
		ls.shards = append(ls.shards, &openShard{key: key, w: w, entries: entries})
		return nil
	})
}

// commitConcurrency bounds the shards of a layer committed at once: an S3
// commit is a Complete and a HeadObject round trip, and doing a layer's one
// after another leaves the link idle between them.
const commitConcurrency = 8

func (a *Assembler) finish(ctx context.Context, ls *levelShards) error {
	for _, sh := range ls.shards {
		index := zarr.AppendIndex(nil, sh.entries)
		if _, err := sh.w.Write(index); err != nil {
			return fmt.Errorf("shard %s: index: %w", sh.key, err)
		}
		sh.off += uint64(len(index))
	}
	sem := make(chan struct{}, commitConcurrency)
	errs := make([]error, len(ls.shards))
	var wg sync.WaitGroup
	for i, sh := range ls.shards {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := sh.w.Commit(); err != nil {
				errs[i] = fmt.Errorf("shard %s: %w", sh.key, err)
			}
		}()
	}
	wg.Wait()
	for _, sh := range ls.shards {
		sh.w = nil // committed or, on failure, aborted by its own Commit
		a.written += int64(sh.off)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	layer := ls.layer
	ls.layer = -1
	ls.shards = ls.shards[:0]
	if a.LayerDone != nil {
		return a.LayerDone(ls.level.Index, layer)
	}
	return nil
}

// Abort discards every shard still open, after a failure.
func (a *Assembler) Abort() {
	for _, ls := range a.levels {
		for _, sh := range ls.shards {
			if sh.w != nil {
				_ = sh.w.Abort()
			}
		}
		ls.shards = nil
		ls.layer = -1
	}
}
