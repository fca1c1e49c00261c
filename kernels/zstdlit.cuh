// zstdlit.cuh: the GPU zstd encoder. It writes, byte for byte, what
// package zstdlit (the Go reference, zstdlit/zstdlit.go) writes: one frame
// per chunk, blocks of at most 128 KiB, each the smallest of RLE, Raw and a
// Compressed block of matches (FSE-coded sequences) and literals (Huffman,
// RLE or raw). Read the package comment there for the rules; these files
// follow them exactly.
//
// Eight kernels, so that every size is known before a byte is written
// and the encoder can write straight into the shard-ordered output:
//
//   zl_seed    a thread block per block (zl_seed3 from level 3): every
//              position's candidate from the block's earlier segments;
//              from level 3, zl_cseed, four thread blocks per chunk, adds
//              the chunk's earlier blocks', and zl_own3, a warp a
//              segment, puts each position's candidate in its own
//              segment over its seed where the parse would take it.
//   zl_parse   a warp per 32 segments of 512 bytes (zl_parse3 from level 3):
//              each lane parses its own segment (zstdlit_parse.cuh) and
//              writes its packed sequences.
//   zl_seq     a warp per block (zstdlit_seq.cuh, zstdlit_seqrounds.cuh): the
//              sequences section, written after where the block's literals
//              will be packed in the scratch copy; whether the block keeps
//              its matches. Dense blocks' state chains run on one warp of
//              the CTA.
//   zl_compact a warp per segment (zstdlit_compact.cuh): packs the
//              literals of the blocks that keep their matches.
//   zl_plan    one CTA per 128 KiB block: histograms of the literals' four
//              stream segments, RLE test, Huffman code lengths
//              (package-merge, 11-bit limit), canonical codes, the exact
//              size of every stream; the type and content size of a block
//              without Huffman literals.
//   zl_tree    a thread per block and accuracy log (zstdlit_tree.cuh): the
//              tree description (FSE or direct weights) and the literals
//              header of the blocks with a Huffman code; their type and
//              content size.
//   zl_frame   one thread per chunk: the frame header size and every
//              block's offset in the frame; the frame size, put where the
//              scan of stored sizes expects it.
//   zl_encode  four CTAs per block (one per stream): headers, then the
//              Huffman bitstream packed in shared memory and copied out at
//              its final offset, then the sequences section; Raw blocks
//              are copied, RLE written.
//
// The exclusive scan between zl_frame and zl_encode is the engine's own
// (zs_exclusive_scan).

#ifndef ZSPOOL_ZSTDLIT_CUH
#define ZSPOOL_ZSTDLIT_CUH

#include <stdint.h>

namespace zl {

constexpr uint32_t kBlock = 128u << 10;
constexpr uint32_t kMinHuff = 64;
constexpr int kMaxBits = 11;
constexpr uint64_t kSingleSegmentLimit = 8u << 20;
constexpr uint32_t kMagic = 0xFD2FB528u;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// kTree is a block's type between zl_plan and zl_tree: Huffman-coded
// literals whose tree description and literals header zl_tree writes
// before it gives the block its type.
enum : uint32_t { kRaw = 0, kRLE = 1, kCompressed = 2, kSkip = 3, kTree = 4 };

// Errors the kernels report in *err (host checks it after a batch).
enum : uint32_t { kErrStreamSize = 1, kErrState = 2 };

// Block is one block's plan, written by zl_plan, zl_tree and zl_frame,
// read by zl_encode. The Go side mirrors its size (litBlockBytes).
struct Block {
	uint32_t type;      // kRaw, kRLE, kCompressed, kSkip (chunk absent); kTree until zl_tree
	uint32_t content;   // bytes after the 3-byte block header
	uint32_t hdr_len;   // bytes of hdr used (compressed blocks)
	uint32_t streams;   // Huffman streams: 1 or 4
	uint32_t stream[4]; // each stream's bytes (kTree: its bits)
	uint32_t out_off;   // the block header's offset within the frame
	uint32_t lit_n;     // literals: the block's bytes when nseq is 0
	uint32_t nseq;      // sequences kept (0: the section is the byte 0x00)
	uint32_t seq_len;   // the sequences section's bytes (zl_seq wrote them after the literals)
	uint32_t lit_mode;  // kLitHuff, kLitRaw or kLitRLE
	uint32_t tree;      // kTree: the longest code (bits 0-7) and the symbols with weights (8-15)
	// kTree: the weights' histogram (kMaxWeight), each at most 255. zl_tree
	// could count it from the code table as it lists the weights, but on
	// its one thread a block that serial count cost the stages after the
	// packing 0.01 to 0.02 ms a GiB more than zl_plan's CTA-wide one
	// (H200, 2026-11-29, the same bytes).
	uint8_t wcount[12];
	uint32_t pad[3];
	uint8_t hdr[144]; // literals header, tree description, jump table; or the RLE byte
};
constexpr uint32_t kBlockBytes = 224; // litBlockBytes
static_assert(sizeof(Block) == kBlockBytes, "Block layout is mirrored in Go");

enum : uint32_t { kLitHuff = 0, kLitRaw = 1, kLitRLE = 2 };

// chunk_absent says whether chunk chunk is left out of the frames: the
// engine's nonfill flags mark the chunks it stores (null: every chunk).
// Its blocks are kSkip, and no kernel seeds, parses or hashes it.
__device__ __forceinline__ bool chunk_absent(const uint32_t *nonfill, uint64_t chunk)
{
	return nonfill != nullptr && nonfill[chunk] == 0;
}

// copy_staged copies bytes staged in shared memory from a word boundary
// to dst, which has any alignment, on T threads (t the caller's index
// among them): the bytes up to a word boundary of dst, then whole words,
// each shifted out of two staged ones, then the tail. The stage has a
// word of room past bytes. zl_encode copies its streams with it (a CTA),
// zl_compact a segment's literals (a warp). A word is shifted even where
// dst is aligned (by 0): choosing a plain load there instead took the
// packing 0.01 to 0.03 ms a GiB longer and the stages after it 0.05 to
// 0.12 (H200, level 1, side by side).
template <uint32_t T>
__device__ __forceinline__ void copy_staged(uint8_t *__restrict__ dst, const uint32_t *stage, uint32_t bytes, unsigned t)
{
	static_assert(T >= 4, "copy_staged: the head and the tail take a thread a byte");
	const uint8_t *sb = reinterpret_cast<const uint8_t *>(stage);
	const uint32_t head = min((uint32_t)((4 - ((uintptr_t)dst & 3)) & 3), bytes);
	if (t < head)
		dst[t] = sb[t];
	const uint32_t words = (bytes - head) / 4;
	uint32_t *dw = reinterpret_cast<uint32_t *>(dst + head);
	const uint32_t sh = 8 * head; // head < 4: word j is bytes head + 4j on
	for (uint32_t j = t; j < words; j += T)
		dw[j] = __funnelshift_r(stage[j], stage[j + 1], sh);
	const uint32_t tail = head + 4 * words;
	if (tail + t < bytes)
		dst[tail + t] = sb[tail + t];
}

// ---------------------------------------------------------------------------
// Frame header (zstdlit.appendFrameHeader).

__device__ __forceinline__ uint32_t frame_header_size(uint64_t n)
{
	if (n > kSingleSegmentLimit)
		return n <= 0xFFFFFFFFull ? 10 : 14;
	if (n <= 0xFF)
		return 6;
	if (n <= 0xFFFF + 256)
		return 7;
	return 9;
}

__device__ __forceinline__ void put_le(uint8_t *dst, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		dst[i] = (uint8_t)(v >> (8 * i));
}

__device__ void write_frame_header(uint8_t *dst, uint64_t n, bool checksum)
{
	put_le(dst, kMagic, 4);
	const uint8_t ck = checksum ? 1 << 2 : 0; // Content_Checksum_flag
	if (n > kSingleSegmentLimit) {
		// Window descriptor 7<<3: a 128 KiB window; the content size is kept.
		if (n <= 0xFFFFFFFFull) {
			dst[4] = ck | 2 << 6;
			dst[5] = 7 << 3;
			put_le(dst + 6, n, 4);
		} else {
			dst[4] = ck | 3 << 6;
			dst[5] = 7 << 3;
			put_le(dst + 6, n, 8);
		}
		return;
	}
	const uint8_t fhd = ck | 1 << 5; // Single_Segment
	if (n <= 0xFF) {
		dst[4] = fhd;
		dst[5] = (uint8_t)n;
	} else if (n <= 0xFFFF + 256) {
		dst[4] = fhd | 1 << 6;
		put_le(dst + 5, n - 256, 2);
	} else {
		dst[4] = fhd | 2 << 6;
		put_le(dst + 5, n, 4);
	}
}

// block_geometry finds block bi's chunk, its offset in the chunk and its
// length: every kernel that takes a block a CTA (or a thread) starts here.
__device__ __forceinline__ void block_geometry(uint64_t chunk_bytes, uint32_t bpc, uint64_t bi, uint64_t &chunk,
                                               uint64_t &off, uint32_t &n)
{
	chunk = bi / bpc;
	off = (uint64_t)(bi % bpc) * kBlock;
	n = (uint32_t)(chunk_bytes - off < kBlock ? chunk_bytes - off : kBlock);
}

#include "zstdlit_fse.cuh"
#include "zstdlit_plan.cuh"
#include "zstdlit_tree.cuh"
#include "zstdlit_parse.cuh"
#include "zstdlit_seed.cuh"
#include "zstdlit_seqtable.cuh"
#include "zstdlit_seq.cuh"
#include "zstdlit_seqrounds.cuh"
#include "zstdlit_compact.cuh"
#include "zstdlit_encode.cuh"

} // namespace zl

// The seeds' walk, the body of zl_seed, zl_seed2 and zl_seed3 below.
#include "zstdlit_walk.cuh"

extern "C" __global__ void __launch_bounds__(zl::kSeedThreads)
    zl_seed(const uint8_t *src, uint64_t chunk_bytes, uint64_t bpc, uint64_t n_blocks, const uint32_t *nonfill,
            uint32_t *seed, uint32_t phase)
{
	zl::seed_blocks<true, zl::kFastKey, zl::kFastSeedBits, 1>(src, chunk_bytes, bpc, n_blocks, nonfill, seed, 0);
}

// Three CTAs an SM are what zl_seed2's 64 KiB table allows; told so, ptxas
// gives it the registers its back count needs (72; 80 with the walk
// unrolled), where it otherwise kept 48 and spilled 24 bytes: the seeds
// 0.07-0.1 ms a GiB slower than with the bound (H100, two rounds side by
// side, before the unrolling).
extern "C" __global__ void __launch_bounds__(zl::kSeedThreads / 2, 3)
    zl_seed2(const uint8_t *src, uint64_t chunk_bytes, uint64_t bpc, uint64_t n_blocks, const uint32_t *nonfill,
             uint32_t *seed, uint32_t phase)
{
	zl::seed_blocks<true, zl::kFastKey, zl::kFastSeedBits, 2>(src, chunk_bytes, bpc, n_blocks, nonfill, seed, phase);
}

// One CTA an SM is what zl_seed3's 128 KiB table allows; told so, ptxas
// gives its unrolled walk 80 registers, where it otherwise kept 40 and
// spilled.
extern "C" __global__ void __launch_bounds__(zl::kSeedThreads, 1)
    zl_seed3(const uint8_t *src, uint64_t chunk_bytes, uint64_t bpc, uint64_t n_blocks, const uint32_t *nonfill,
             uint32_t *seed, uint32_t phase)
{
	zl::seed_blocks<false, zl::kStrongKey, zl::kStrongSeedBits, 1>(src, chunk_bytes, bpc, n_blocks, nonfill, seed, 0);
}

// zl_cseed: from level 3, parts CTAs per chunk of more than one block
// (at most zstdlit's singleSegmentLimit), each holding its part of the
// chunk's table of latest positions (2^bits entries of key-byte hashes,
// split by ChunkPart) in shared memory: walks the chunk's blocks in order
// and gives every eligible position whose seed zl_seed left empty, and
// whose hash is in the part, the table's entry from before the position's
// block went in (block-relative, so negative), when the entry's tag agrees
// (chunk_seed_block says why that is enough). An entry is the position + 1
// above tag_bits more bits of its hash, 0 for none, so that atomicMax
// still keeps the latest position. Runs after zl_seed; the blocks zl_seed
// skips are skipped, but every block but the last goes into the table, as
// zstdlit's endBlock has it.
//
// The whole table in global memory, a CTA a chunk, kept L2 busy with its
// random look-ups and atomics, and only 64 tables fit L2, so half the SMs
// waited; every CTA hashing every position of its chunk costs less. The
// host picks the fewest parts that fit the GPU's shared memory
// (litChunkParts): three on an H100, four on an A100.
extern "C" __global__ void __launch_bounds__(zl::kCSeedThreads)
    zl_cseed(const uint8_t *src, uint64_t chunk_bytes, uint64_t bpc, uint64_t n_chunks, const uint32_t *nonfill,
             uint32_t *seed, uint32_t key, uint32_t bits, uint32_t tag_bits, uint32_t parts)
{
	extern __shared__ uint32_t part_tab[]; // ChunkPart::size entries
	const uint32_t hm = zl::key_hi(key);
	for (uint64_t x = blockIdx.x; x < n_chunks * parts; x += gridDim.x) {
		const uint64_t chunk = x / parts;
		if (zl::chunk_absent(nonfill, chunk))
			continue;
		const zl::ChunkPart cp(bits, (uint32_t)(x % parts), parts);
		for (uint32_t h = threadIdx.x; h < cp.size; h += zl::kCSeedThreads)
			part_tab[h] = 0;
		__syncthreads();
		const uint8_t *cs = src + chunk * chunk_bytes;
		uint32_t *out = seed + chunk * chunk_bytes;
		for (uint32_t b = 0; b < bpc; b++) {
			const uint32_t off = b * zl::kBlock;
			const uint32_t n = chunk_bytes - off < zl::kBlock ? (uint32_t)(chunk_bytes - off) : zl::kBlock;
			if (b > 0 && n >= zl::kMinHuff)
				zl::chunk_seed_block(cs, off, n, out, key, hm, bits, tag_bits, cp, part_tab);
			__syncthreads();
			if (b + 1 < bpc)
				zl::chunk_insert_block(cs, off, n, key, hm, bits, tag_bits, cp, part_tab);
			__syncthreads();
		}
	}
}

// zl_own3: from level 3, after zl_seed3 and zl_cseed, a warp a segment:
// each position's candidate in its own segment, over its seed where its
// match is long enough (own_segment).
extern "C" __global__ void __launch_bounds__(zl::kOwnWarps * 32, 8)
    zl_own3(const uint8_t *src, uint64_t chunk_bytes, uint64_t bpc, uint64_t n_blocks, const uint32_t *nonfill,
            uint32_t *seed, uint32_t min_match)
{
	__shared__ zl::OwnShared S;
	const unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
	for (uint32_t j = threadIdx.x; j < zl::kOwnWarps << zl::kStrongHashBits; j += blockDim.x)
		(&S.lanes[0][0])[j] = 0;
	__syncthreads();
	const uint32_t mm = min_match > zl::kStrongKey ? min_match : zl::kStrongKey;
	const uint64_t n_segs = n_blocks * zl::kSegsPerBlock;
	for (uint64_t s = (uint64_t)blockIdx.x * zl::kOwnWarps + w; s < n_segs; s += (uint64_t)gridDim.x * zl::kOwnWarps) {
		uint64_t chunk, off;
		uint32_t n;
		zl::block_geometry(chunk_bytes, (uint32_t)bpc, s / zl::kSegsPerBlock, chunk, off, n);
		if (zl::block_skipped(nonfill, chunk, n))
			continue;
		const uint32_t a = (uint32_t)(s % zl::kSegsPerBlock) * zl::kSeg;
		if (a >= n)
			continue;
		zl::own_segment(src + chunk * chunk_bytes + off, a, n - a < zl::kSeg ? n - a : zl::kSeg,
		                seed + zl::seed_index<1>(chunk, chunk_bytes, off), mm, S.seg[w], S.tab[w], S.lanes[w], lane);
	}
}

// zl_parse: kParseCTAs CTAs (warps) per block, one thread per 512-byte
// segment;
// min_match is zstdlit.Options' ShortestMatch, key its KeyBytes (6, or 5
// from level 3); seed is zl_seed's candidates, side takes the
// Offset_Values too large to pack. The fast rung's segment table; zl_parse2
// is the same on the grid (zl_seed2's seeds) with its smaller table,
// and zl_parse3 with the strong rung's, in dynamic shared memory.
namespace zl {
// parse_blocks is a parse kernel's walk: the CTA's parts of the blocks,
// in turn, with the warp's segments in S.
template <int HB, uint32_t G>
__device__ __forceinline__ void parse_blocks(const uint8_t *src, uint64_t chunk_bytes, uint64_t bpc, uint64_t n_blocks,
                                             const uint32_t *nonfill, uint32_t *seq_buf, uint32_t *seg_meta,
                                             uint32_t min_match, const uint32_t *seed, uint32_t *side, uint32_t key,
                                             uint32_t phase, ParseShared<HB> &S)
{
	for (uint64_t x = blockIdx.x; x < kParseCTAs * n_blocks; x += gridDim.x) {
		parse_part<HB, G>(src, chunk_bytes, (uint32_t)bpc, nonfill, seq_buf, seg_meta, x / kParseCTAs,
		                  (uint32_t)(x % kParseCTAs), min_match, key, phase, seed, side, S);
		__syncwarp();
	}
}
} // namespace zl

extern "C" __global__ void __launch_bounds__(zl::kParseThreads)
    zl_parse(const uint8_t *src, uint64_t chunk_bytes, uint64_t bpc, uint64_t n_blocks, const uint32_t *nonfill,
             uint32_t *seq_buf, uint32_t *seg_meta, uint32_t min_match, const uint32_t *seed, uint32_t *side,
             uint32_t key, uint32_t phase)
{
	__shared__ zl::ParseShared<zl::kFastHashBits> S;
	zl::parse_blocks<zl::kFastHashBits, 1>(src, chunk_bytes, bpc, n_blocks, nonfill, seq_buf, seg_meta, min_match,
	                                       seed, side, key, 0, S);
}

extern "C" __global__ void __launch_bounds__(zl::kParseThreads)
    zl_parse2(const uint8_t *src, uint64_t chunk_bytes, uint64_t bpc, uint64_t n_blocks, const uint32_t *nonfill,
              uint32_t *seq_buf, uint32_t *seg_meta, uint32_t min_match, const uint32_t *seed, uint32_t *side,
              uint32_t key, uint32_t phase)
{
	__shared__ zl::ParseShared<zl::kGridHashBits> S;
	zl::parse_blocks<zl::kGridHashBits, 2>(src, chunk_bytes, bpc, n_blocks, nonfill, seq_buf, seg_meta, min_match,
	                                       seed, side, key, phase, S);
}

extern "C" __global__ void __launch_bounds__(zl::kParseThreads)
    zl_parse3(const uint8_t *src, uint64_t chunk_bytes, uint64_t bpc, uint64_t n_blocks, const uint32_t *nonfill,
              uint32_t *seq_buf, uint32_t *seg_meta, uint32_t min_match, const uint32_t *seed, uint32_t *side,
              uint32_t key, uint32_t phase)
{
	extern __shared__ uint4 parse_mem[];
	auto &S = *reinterpret_cast<zl::ParseShared<zl::kStrongHashBits> *>(parse_mem);
	zl::parse_blocks<zl::kStrongHashBits, 1>(src, chunk_bytes, bpc, n_blocks, nonfill, seq_buf, seg_meta, min_match,
	                                         seed, side, key, 0, S);
}

// zl_seq: one warp per block, kSeqWarps warps a CTA, each with its own
// shared memory; the sequences section. Seven CTAs an SM, as shared memory
// allows: ptxas then keeps zl_seq to 80 registers, which an SM
// sub-partition's 16K hold for six warps; a build with 96 ran at six CTAs
// and took 5 to 13% longer than bdd124b on every set (H100, side by side).
extern "C" __global__ void __launch_bounds__(zl::kSeqWarps * 32, 7)
    zl_seq(uint64_t chunk_bytes, uint64_t bpc, uint64_t n_blocks, const uint32_t *nonfill, const uint32_t *seq_buf,
           const uint32_t *side, const uint32_t *seg_meta, uint8_t *lit, zl::Block *blocks)
{
	__shared__ zl::SeqShared shared[zl::kSeqWarps];
	const unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
	zl::SeqShared &S = shared[w];
	S.load_tables(lane);
	__syncwarp();
	for (uint64_t b0 = (uint64_t)blockIdx.x * zl::kSeqWarps; b0 < n_blocks; b0 += (uint64_t)gridDim.x * zl::kSeqWarps) {
		zl::seq_rounds(chunk_bytes, (uint32_t)bpc, n_blocks, nonfill, seq_buf, side, seg_meta, lit, blocks, b0, shared,
		               w, lane);
		__syncwarp();
	}
}

// zl_compact: one CTA per block, a warp per segment at a time; packs the
// literals of the blocks that keep their matches. Five CTAs an SM: ptxas
// then gives compact_segment 48 registers, where at six (40) it spilled
// 28 bytes; side by side (H200, level 1, the same bytes) the packing took
// 0.01 to 0.04 ms a GiB less on every set. (When the literals were
// gathered run by run, six CTAs and a 24-byte spill beat five on an
// H100.)
extern "C" __global__ void __launch_bounds__(zl::kSegsPerBlock, 5)
    zl_compact(const uint8_t *src, uint64_t chunk_bytes, uint64_t bpc, uint64_t n_blocks, const uint32_t *seq_buf,
               const uint32_t *seg_meta, uint8_t *lit, const zl::Block *blocks)
{
	static_assert(zl::kSegsPerBlock == 32 * zl::kCompactWarps, "zl_compact: a thread per segment");
	__shared__ zl::CompactShared S;
	for (uint64_t bi = blockIdx.x; bi < n_blocks; bi += gridDim.x) {
		zl::compact_block(src, chunk_bytes, (uint32_t)bpc, seq_buf, seg_meta, lit, blocks, bi, S);
		__syncthreads();
	}
}

// zl_plan: one CTA per block of every chunk (chunk-major). nonfill, when
// given, marks the chunks to encode; the others are planned as absent.
// Six CTAs an SM, as before zl_tree took the tree descriptions out: left
// to itself ptxas now takes 48 registers, which admit five.
extern "C" __global__ void __launch_bounds__(zl::kThreads, 6)
    zl_plan(const uint8_t *src, const uint8_t *lit, uint64_t chunk_bytes, uint64_t bpc, uint64_t n_blocks,
            const uint32_t *nonfill, zl::Block *blocks, uint32_t *tables)
{
	__shared__ zl::PlanShared S;
	for (uint64_t bi = blockIdx.x; bi < n_blocks; bi += gridDim.x) {
		zl::plan_block(src, lit, chunk_bytes, (uint32_t)bpc, nonfill, blocks, tables, bi, S);
		__syncthreads();
	}
}

// zl_tree: a CTA per kTreeThreads / 2 blocks, a thread per block and
// accuracy log (zstdlit_tree.cuh): the tree description and literals
// header of the blocks zl_plan left kTree, and their type.
extern "C" __global__ void __launch_bounds__(zl::kTreeThreads)
    zl_tree(uint64_t chunk_bytes, uint64_t bpc, uint64_t n_blocks, zl::Block *blocks, const uint32_t *tables)
{
	__shared__ zl::TreeShared S;
	constexpr uint32_t per = zl::kTreeThreads / 2;
	for (uint64_t base = (uint64_t)blockIdx.x * per; base < n_blocks; base += (uint64_t)gridDim.x * per) {
		const uint64_t bi = base + threadIdx.x / 2;
		const bool active = bi < n_blocks && blocks[bi].type == zl::kTree;
		zl::tree_block(chunk_bytes, (uint32_t)bpc, blocks + bi, tables + bi * 256, bi, active, S);
		__syncwarp();
	}
}

// zl_frame: one thread per chunk. Lays out the frame and puts its size at
// sizes[key_of[i]] (sizes[i] without keys); absent chunks keep size 0.
extern "C" __global__ void zl_frame(uint64_t chunk_bytes, uint64_t bpc, uint64_t n_chunks, zl::Block *blocks,
                                    const uint64_t *key_of, uint64_t *sizes, uint64_t checksum)
{
	for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_chunks;
	     i += (uint64_t)gridDim.x * blockDim.x) {
		zl::Block *blk = blocks + i * bpc;
		const uint64_t key = key_of != nullptr ? key_of[i] : i;
		if (blk[0].type == zl::kSkip) {
			sizes[key] = 0;
			continue;
		}
		uint64_t off = zl::frame_header_size(chunk_bytes);
		for (uint32_t b = 0; b < bpc; b++) {
			blk[b].out_off = (uint32_t)off;
			off += 3 + blk[b].content;
		}
		sizes[key] = off + (checksum ? 4 : 0);
	}
}

// zl_encode: four CTAs per block, CTA q writing stream q (the headers and
// Raw/RLE blocks are shared out among them). Four CTAs an SM, as its
// 46 KiB of shared memory allows: left to itself ptxas took 80 registers,
// three CTAs fit, and the warps waited on their loads with none eligible
// in 48% of the cycles (Nsight Compute, H200, flat fields). At 64
// registers (a 16-byte spill) the rest of the kernels took 3.41 -> 3.28 ms
// a GiB on flat fields, 3.47 -> 3.33 on saturated 8-bit frames and 1.74 ->
// 1.67 on dim frames (H200, two rounds side by side).
extern "C" __global__ void __launch_bounds__(zl::kThreads, 4)
    zl_encode(const uint8_t *src, const uint8_t *lit, uint64_t chunk_bytes, uint64_t bpc, uint64_t n_blocks,
              const zl::Block *blocks,
              const uint32_t *tables, const uint64_t *key_of, const uint64_t *offsets, uint8_t *out, uint32_t *err,
              uint64_t checksum)
{
	__shared__ zl::EncodeShared S;
	for (uint64_t x = blockIdx.x; x < 4 * n_blocks; x += gridDim.x) {
		zl::encode_block(src, lit, chunk_bytes, (uint32_t)bpc, blocks, tables, key_of, offsets, out, err, x >> 2,
		                 (uint32_t)(x & 3), checksum != 0, S);
		__syncthreads();
	}
}

// zl_xxh: four threads per chunk hash the chunks to be encoded (those
// nonfill marks, or all when it is null) into hash, the low 4 bytes of
// each one's XXH64: zstd's optional Content_Checksum. It reads the source
// alone, so the engine runs it on a stream of its own beside the match
// kernels (litHasher, zstdlit_hash.go): its four serial chains a chunk
// keep a few SMs busy for about 2.3 ms a GiB, which on the compute
// stream, after the encode, added as much to every batch.
extern "C" __global__ void __launch_bounds__(256)
    zl_xxh(const uint8_t *src, uint64_t chunk_bytes, uint64_t n_chunks, const uint32_t *nonfill, uint32_t *hash)
{
	const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	const uint64_t i = t / 4;
	const bool active = i < n_chunks && !zl::chunk_absent(nonfill, i);
	const uint64_t h = zl::xxh64_group(src + (active ? i : 0) * chunk_bytes, chunk_bytes, (uint32_t)(t & 3), active);
	if (active && (t & 3) == 0)
		hash[i] = (uint32_t)h;
}

// zl_checksum: a thread per chunk puts zl_xxh's hash after the frame's
// last block.
extern "C" __global__ void __launch_bounds__(256)
    zl_checksum(uint64_t bpc, uint64_t n_chunks, const zl::Block *blocks, const uint64_t *key_of,
                const uint64_t *offsets, const uint32_t *hash, uint8_t *out)
{
	const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n_chunks || blocks[i * bpc].type == zl::kSkip)
		return;
	const zl::Block &last = blocks[i * bpc + bpc - 1];
	uint8_t *end = out + offsets[key_of != nullptr ? key_of[i] : i] + last.out_off + 3 + last.content;
	zl::put_le(end, hash[i], 4);
}

#endif
