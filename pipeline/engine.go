package pipeline

import "context"

// Engine turns epochs of raw level-0 bytes into compressed chunks grouped
// by shard. The CPU engine is the reference; every other engine must decode
// to the same bytes and report the same present/absent slots.
type Engine interface {
	// Encode processes one epoch. The returned outputs (one per level that
	// completed a chunk row) stay valid until the next Encode or Flush,
	// or, for an output with a Lease, until the lease is released.
	Encode(ctx context.Context, e Epoch) ([]LevelOutput, error)
	// Flush emits what is still held back at end of data (partial pyramid
	// groups along a downsampled dim 0).
	Flush(ctx context.Context) ([]LevelOutput, error)
	// Stages reports time spent per stage so far.
	Stages() []Stage
	Close() error
}

// LevelOutput is one chunk row of one level, grouped by shard.
type LevelOutput struct {
	Level  int
	Epoch  int64 // the level's chunk row along dim 0
	Shards []ShardOut
	// Lease, when set, lends the chunks' bytes to whoever takes the
	// output (the assembler), who releases it once they are written; a
	// consumer that keeps rows otherwise takes them with Keep.
	Lease *Lease
}

// ShardOut is the part of a chunk row that belongs to one shard.
type ShardOut struct {
	Inner  int64      // the shard's index within its layer: C order over g_1…
	Chunks []ChunkOut // in slot order
}

// ChunkOut is one stored chunk. Data nil means absent: the chunk equals
// fill everywhere and gets the 2^64−1 index entry.
type ChunkOut struct {
	Slot int64
	Data []byte
}

// Stager is an engine that wants raw epochs read straight into its own two
// buffers of at least one epoch each — pinned host memory a GPU copies from
// with no staging copy. Convert uses them when the engine offers them.
type Stager interface {
	StagingBuffers() [][]byte
}

// StageResetter is an engine whose stage figures can be zeroed, so that a
// warm-up pass does not count (bench).
type StageResetter interface {
	ResetStages()
}

// EpochHolder is an engine that may still read an epoch's bytes after
// Encode returns it outputs: Convert then releases each epoch only after
// the next Encode, or Flush, returns. After a failed Encode or Flush,
// Settle waits until the engine reads no epoch it was given.
type EpochHolder interface {
	HoldsEpochs() bool
	Settle()
}
