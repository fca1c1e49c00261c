package pipeline

import (
	"bytes"
	"sync/atomic"
)

// Lease lends a chunk row's stored bytes (LevelOutput.Lease) to the
// assembler, which hands them to the shard writers as they are instead of
// copying them into its queue; the engine reuses the memory only once the
// last holder has released it. It starts with one hold, the assembler's.
type Lease struct {
	holds    atomic.Int64
	giveBack func()
}

// NewLease is a lease with one hold; giveBack runs once, when the last
// hold is released.
func NewLease(giveBack func()) *Lease {
	l := &Lease{giveBack: giveBack}
	l.holds.Store(1)
	return l
}

// Hold adds a holder, who must Release in turn.
func (l *Lease) Hold() { l.holds.Add(1) }

// Release ends one hold; the last gives the bytes back to the engine.
func (l *Lease) Release() {
	if l.holds.Add(-1) == 0 {
		l.giveBack()
	}
}

// releaseOutputs releases the leases of outputs that will not reach the
// assembler (a run that failed before handing them over).
func releaseOutputs(outs []LevelOutput) {
	for _, o := range outs {
		if o.Lease != nil {
			o.Lease.Release()
		}
	}
}

// Keep is a copy of o in memory of its own (its shards, chunks and their
// bytes), for a consumer other than the assembler that keeps an engine's
// rows past its next Encode; it gives o's lease back, as the engine
// reuses a lent row's memory only then, and its next row of that level
// waits until it has.
func Keep(o LevelOutput) LevelOutput {
	c := o
	c.Lease = nil
	c.Shards = make([]ShardOut, len(o.Shards))
	for i, s := range o.Shards {
		c.Shards[i] = ShardOut{Inner: s.Inner, Chunks: make([]ChunkOut, len(s.Chunks))}
		for j, ch := range s.Chunks {
			c.Shards[i].Chunks[j] = ChunkOut{Slot: ch.Slot, Data: bytes.Clone(ch.Data)}
		}
	}
	if o.Lease != nil {
		o.Lease.Release()
	}
	return c
}
