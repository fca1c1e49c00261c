package kernels

import (
	"fmt"

	"github.com/zspool/zspool/zstdlit"
)

// The launch geometry the host and the CUDA sources share, outside the
// cuda build so that CI, which has no GPU, checks it against the sources
// (constants_test.go).
const (
	litParseThreads     = 32   // zl_parse's CTA: a warp, a segment a lane (kParseThreads)
	litChunkSeedThreads = 1024 // zl_cseed's CTA (kCSeedThreads)
	litOwnWarps         = 4    // zl_own3's CTA in warps, a segment each (kOwnWarps)
	litSeqWarps         = 3    // zl_seq's CTA in warps, a block each (kSeqWarps)
	litTreeThreads      = 32   // zl_tree's CTA: a block a pair of threads, one an accuracy log (kTreeThreads)
	litBlockBytes       = 224  // sizeof(zl::Block), each block's plan (kBlockBytes)
	// litSlotStride is a segment's room for its packed sequences, in
	// words: the most it holds, rounded up to whole groups of four, which
	// the parse stores at once (kSlotStride).
	litSlotStride = (zstdlit.MaxSegmentSeqs + 3) / 4 * 4
	// litMaxChunkParts bounds the parts litChunkParts splits the chunk
	// table into: a GPU with less shared memory than a 16th of the table
	// (32 KiB) a CTA does not run the encoder's level 3.
	litMaxChunkParts = 16
)

// litChunkPartBytes is the shared memory of a zl_cseed CTA that keeps one
// of parts parts of a chunk table of 2^bits 4-byte entries: part p holds
// the hashes h with h*parts >> bits == p, at most ceil(2^bits/parts).
func litChunkPartBytes(bits, parts int) int { return 4 * ((1<<bits + parts - 1) / parts) }

// litChunkParts is the fewest parts, each a CTA's, that a chunk table of
// 2^bits entries splits into when a CTA may have limit bytes of shared
// memory: every CTA of a chunk hashes all of the chunk's positions and
// keeps its part's, so fewer parts hash less (zl_cseed issues an
// instruction in three cycles of four, Nsight Compute on an H100). An
// H100 (227 KiB) takes 2^17 entries in three parts, an A100 (163 KiB) in
// four.
func litChunkParts(bits, limit int) (int, error) {
	for parts := 1; parts <= litMaxChunkParts; parts++ {
		if litChunkPartBytes(bits, parts) <= limit {
			return parts, nil
		}
	}
	return 0, fmt.Errorf("level 3's chunk table (%d KiB) takes more than %d parts of %d bytes of shared memory",
		4<<bits>>10, litMaxChunkParts, limit)
}
