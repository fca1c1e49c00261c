package config

import (
	"math"
	"strconv"
)

const (
	// maxChunkBytes bounds one uncompressed chunk: every engine holds a
	// whole epoch of chunks in memory, and zstd frames past this are slow.
	maxChunkBytes = 1 << 30
	// shardFillBytes is what a default shard fills toward, uncompressed.
	shardFillBytes = 128 << 20
	// shardIndexSlotBytes and shardIndexTailBytes size a shard's index:
	// (offset u64, nbytes u64) per chunk, then a crc32c.
	shardIndexSlotBytes = 16
	shardIndexTailBytes = 4
)

// ChunkBytes is the uncompressed size of one chunk: the product of every
// dimension's chunk length times the element size. For a manifest that
// ParseManifest accepted it is exact and at most 1 GiB; for any other it
// is -1 when a chunk length is negative or the product overflows int64.
func (m *Manifest) ChunkBytes() int64 {
	n := int64(m.DType.Size())
	for _, d := range m.Dimensions {
		var ok bool
		if n, ok = mulNonNeg(n, d.Chunk); !ok {
			return -1
		}
	}
	return n
}

// FrameElems is the number of elements per index of dimension 0 (one
// frame): the product of the sizes of dimensions 1…n-1, and 1 for a
// one-dimensional array. The raw file's frame stride is FrameElems times
// the element size. For a manifest that ParseManifest accepted the frame's
// byte size fits in int64; for any other FrameElems is -1 when a size is
// negative or the product overflows.
func (m *Manifest) FrameElems() int64 {
	n := int64(1)
	for i := 1; i < len(m.Dimensions); i++ {
		var ok bool
		if n, ok = mulNonNeg(n, m.Dimensions[i].Size); !ok {
			return -1
		}
	}
	return n
}

// mulNonNeg multiplies two non-negative int64s; ok is false when either is
// negative or the product overflows.
func mulNonNeg(a, b int64) (int64, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	if a == 0 || b == 0 {
		return 0, true
	}
	if a > math.MaxInt64/b {
		return 0, false
	}
	return a * b, true
}

// chunkCount is t_d = ceil(size/chunk), the number of chunks along a
// dimension of known size (size ≥ 1, chunk ≥ 1); it cannot overflow.
func chunkCount(size, chunk int64) int64 {
	return (size-1)/chunk + 1
}

// checkShape applies the rules that concern the whole shape rather than one
// field, and fills the default shards. It needs a valid dtype and, for
// every dimension, a valid size, chunk and (if given) shard.
func checkShape(m *Manifest, shardGiven []bool, p *problems) {
	const field = "dimensions"
	elem := int64(m.DType.Size())

	chunkBytes := m.ChunkBytes()
	if chunkBytes < 0 || chunkBytes > maxChunkBytes {
		shown := "more than 2^63 bytes"
		if chunkBytes >= 0 {
			shown = strconv.FormatInt(chunkBytes, 10) + " bytes"
		}
		p.add(field, "a chunk of %s exceeds 1 GiB; choose smaller chunks", shown)
		return
	}

	frame := m.FrameElems()
	frameBytes, ok := mulNonNeg(frame, elem)
	if frame < 0 || !ok {
		p.add(field, "a frame (one index of dimensions[0]) exceeds 2^63 bytes")
		return
	}
	if size0 := m.Dimensions[0].Size; size0 > 0 {
		if _, ok := mulNonNeg(size0, frameBytes); !ok {
			p.add(field, "the array of %d frames of %d bytes exceeds 2^63 bytes", size0, frameBytes)
			return
		}
	}

	fillShards(m.Dimensions, shardGiven, chunkBytes)

	// A shard's uncompressed size and its index must be computable.
	slots := int64(1)
	for _, d := range m.Dimensions {
		if slots, ok = mulNonNeg(slots, d.Shard); !ok {
			break
		}
	}
	_, bytesOK := mulNonNeg(slots, chunkBytes)
	if !ok || !bytesOK || slots > (math.MaxInt64-shardIndexTailBytes)/shardIndexSlotBytes {
		p.add(field, "a shard of that many chunks exceeds 2^63 bytes; choose smaller shards")
	}
}

// fillShards sets the shard (chunks per shard) of every dimension whose
// manifest gave none, so that a shard fills toward shardFillBytes
// uncompressed. The budget, in chunks, is spent from the fastest dimension
// down to dimension 1, each taking as many chunks as it has (t_d) or as the
// budget still allows; dimension 0 takes what is left, at least 1 and, when
// its size is known, at most its chunk count. A shard the manifest gave
// keeps its value and uses up budget like a default one.
func fillShards(dims []Dimension, given []bool, chunkBytes int64) {
	budget := max(1, shardFillBytes/max(1, chunkBytes))
	for d := len(dims) - 1; d >= 1; d-- {
		if !given[d] {
			dims[d].Shard = min(chunkCount(dims[d].Size, dims[d].Chunk), budget)
		}
		budget = max(1, budget/max(1, dims[d].Shard))
	}
	if !given[0] {
		p0 := budget
		if dims[0].Size > 0 {
			p0 = min(p0, chunkCount(dims[0].Size, dims[0].Chunk))
		}
		dims[0].Shard = max(1, p0)
	}
}
