// zstdlit_compact.cuh: the literals' packing (zl_compact): each block
// that keeps its matches has its bytes outside them packed, in order, at
// the start of its room in the scratch copy, where zl_seq wrote the
// sequences section after them. Included by zstdlit.cuh inside namespace
// zl, after zstdlit_seq.cuh, whose SlotRegs loads a segment's sequences.

#ifndef ZSPOOL_ZSTDLIT_COMPACT_CUH
#define ZSPOOL_ZSTDLIT_COMPACT_CUH

// CompactShared: each segment's place in the block's literals, and for
// the segment a warp is packing, the bits that mark where its literal runs
// start and end (a bit a byte of the segment) and its packed literals
// before they are stored (a word of room past the segment, for the
// stores' shifted reads).
constexpr int kCompactWarps = kSegsPerBlock / 32;
constexpr uint32_t kSegMarkWords = kSeg / 32;
// kFewLaneLits: where no lane of a segment has more literals among its 16
// bytes than this, each lane stores its own one by one (compact_segment).
constexpr uint32_t kFewLaneLits = 4;
struct CompactShared {
	uint32_t base[kSegsPerBlock];
	uint32_t meta[kSegsPerBlock];
	uint32_t scan[kSegsPerBlock / 32];
	uint32_t starts[kCompactWarps][kSegMarkWords], ends[kCompactWarps][kSegMarkWords];
	alignas(16) uint8_t out[kCompactWarps][kSeg + 16];
};

// segment_bytes16 is bytes 16*lane to 16*lane+15 of the segment of len
// bytes at sp, those past len 0: one 16-byte load a lane where the
// segment is whole and aligned, as it is in every chunk of a multiple of
// 16 bytes.
__device__ __forceinline__ uint4 segment_bytes16(const uint8_t *__restrict__ sp, uint32_t len, unsigned lane)
{
	if (len == kSeg && ((uintptr_t)sp & 15) == 0)
		return __ldg(reinterpret_cast<const uint4 *>(sp) + lane);
	uint32_t w[4] = {0, 0, 0, 0};
	for (uint32_t i = 0; i < 16; i++) {
		const uint32_t at = 16 * lane + i;
		if (at < len)
			w[i / 4] |= (uint32_t)sp[at] << (8 * (i % 4));
	}
	return make_uint4(w[0], w[1], w[2], w[3]);
}

// compact_segment packs one segment's nlit literals (the segment of len
// bytes at sp, its k packed sequences in slot, lane + 32r's in slot[r])
// to d. One warp, a lane 16 bytes of the segment: the literal runs' starts
// and ends are marked a bit a byte, each lane works out which of its bytes
// are literals from its bits and the parity of the marks before them (a
// ballot), and puts them at its place among the warp's (a scan of the
// lanes' counts). The loads are one 16-byte load a lane, where gathering
// every literal by its run (a search, or a walk from run to run) took
// three warp instructions a literal with 12 to 20 lanes active (Nsight
// Compute, H200, bright cells).
__device__ void compact_segment(const uint8_t *__restrict__ sp, uint32_t len, const uint32_t (&slot)[kSlotRounds],
                                uint32_t k, uint32_t nlit, uint8_t *__restrict__ d, uint32_t *starts, uint32_t *ends,
                                uint8_t *out, unsigned lane)
{
	// Every byte in a match: in the Go reference, 29% of dim frames'
	// segments at level 3.
	if (nlit == 0)
		return;
	if (lane < kSegMarkWords)
		starts[lane] = 0;
	else if (lane < 2 * kSegMarkWords)
		ends[lane - kSegMarkWords] = 0;
	__syncwarp();
	// Each sequence's literal run: from the end of the match before it,
	// ll bytes; then the trailing run to the segment's end. An empty run
	// marks nothing, and a run's end is never another's start (a match of
	// at least the shortest lies between).
	uint32_t s0 = 0;
#pragma unroll
	for (uint32_t r = 0; r < kSlotRounds; r++) {
		const uint32_t j0 = 32 * r;
		if (j0 >= k)
			break;
		const uint32_t j = j0 + lane;
		const uint32_t q = j < k ? slot[r] : 0;
		uint32_t ts;
		const uint32_t a = s0 + warp_excl_scan(seq_ll(q) + seq_ml(q), lane, ts);
		if (seq_ll(q) != 0) {
			atomicOr(&starts[a / 32], 1u << (a % 32));
			atomicOr(&ends[(a + seq_ll(q)) / 32], 1u << ((a + seq_ll(q)) % 32));
		}
		s0 += ts;
	}
	if (lane == 0 && s0 < len) {
		atomicOr(&starts[s0 / 32], 1u << (s0 % 32));
		if (len < kSeg)
			atomicOr(&ends[len / 32], 1u << (len % 32));
	}
	__syncwarp();
	// The lane's 16 bytes: a literal where the marks at or before it are
	// odd in number.
	const uint32_t sh = 16 * (lane & 1);
	uint32_t x = ((starts[lane / 2] ^ ends[lane / 2]) >> sh) & 0xFFFFu;
	const uint32_t odd = __ballot_sync(0xFFFFFFFFu, __popc(x) & 1);
	x ^= x << 1;
	x ^= x << 2;
	x ^= x << 4;
	x ^= x << 8;
	const uint32_t lit = (x ^ ((__popc(odd & ((1u << lane) - 1)) & 1) != 0 ? 0xFFFFu : 0u)) & 0xFFFFu;
	uint32_t total;
	uint32_t at = warp_excl_scan((uint32_t)__popc(lit), lane, total);
	if (__reduce_max_sync(0xFFFFFFFFu, (uint32_t)__popc(lit)) <= kFewLaneLits) {
		// Few literals a lane, as dim frames' dozens of short runs a
		// segment leave: a lane stores its own straight to d, a loop a
		// literal, where the unrolled pass over all 16 bytes and the
		// staging cost more than the literals. Side by side (H200, one
		// call, the same bytes), dim frames' packing took 1.02 -> 0.99
		// ms a GiB at level 1, 0.98 -> 0.71 at level 3 and 1.06 -> 0.94
		// on every position; the other sets', which never take it, 0.01
		// to 0.04 more.
		if (lit != 0) {
			const uint4 v = segment_bytes16(sp, len, lane);
			const uint64_t lo = (uint64_t)v.y << 32 | v.x, hi = (uint64_t)v.w << 32 | v.z;
			for (uint32_t m = lit; m != 0; m &= m - 1) {
				const uint32_t i = (uint32_t)(__ffs(m) - 1);
				d[at++] = (uint8_t)((i < 8 ? lo : hi) >> (8 * (i & 7)));
			}
		}
		__syncwarp();
		return;
	}
	const uint4 v = segment_bytes16(sp, len, lane);
	const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
	for (uint32_t i = 0; i < 16; i++) {
		if ((lit >> i) & 1)
			out[at] = (uint8_t)(w[i / 4] >> (8 * (i % 4)));
		at += (lit >> i) & 1;
	}
	__syncwarp();
	copy_staged<32>(d, reinterpret_cast<const uint32_t *>(out), nlit, lane);
	__syncwarp();
}

// compact_block packs block bi's literals (its bytes outside the kept
// matches) at the start of its room in lit. A warp per segment at a time.
__device__ void compact_block(const uint8_t *__restrict__ src, uint64_t chunk_bytes, uint32_t bpc,
                              const uint32_t *__restrict__ seqBuf, const uint32_t *__restrict__ segMeta,
                              uint8_t *__restrict__ lit, const Block *__restrict__ blocks, uint64_t bi,
                              CompactShared &S)
{
	const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	if (blocks[bi].nseq == 0)
		return;
	uint64_t chunk, off;
	uint32_t n;
	block_geometry(chunk_bytes, bpc, bi, chunk, off, n);
	const uint32_t nsegs = block_segs(n);
	const uint64_t g0 = block_first_seg(chunk_bytes, bpc, chunk, bi);
	// Exclusive scan of the segments' literal counts, a segment a thread.
	const uint32_t m = tid < nsegs ? segMeta[g0 + tid] : 0;
	uint32_t total;
	const uint32_t before = warp_excl_scan(meta_nlit(m), lane, total);
	if (lane == 0)
		S.scan[warp] = total;
	S.meta[tid] = m;
	__syncthreads();
	uint32_t base = before;
	for (unsigned w = 0; w < warp; w++)
		base += S.scan[w];
	S.base[tid] = base;
	__syncthreads();
	// A warp loads its next segment's sequences while it packs the one
	// before: loaded as the segment began, they held the warp for a DRAM
	// round trip each time (8% of zl_compact's stall samples on flat
	// fields, Nsight Compute, H100).
	SlotRegs cur;
	if (warp < nsegs)
		cur.load_seqs(seqBuf, g0, warp, meta_nseq(S.meta[warp]), lane);
	for (uint32_t sg = warp; sg < nsegs; sg += kCompactWarps) {
		const uint32_t ms = S.meta[sg];
		const SlotRegs here = cur;
		if (sg + kCompactWarps < nsegs)
			cur.load_seqs(seqBuf, g0, sg + kCompactWarps, meta_nseq(S.meta[sg + kCompactWarps]), lane);
		compact_segment(src + chunk * chunk_bytes + off + (uint64_t)sg * kSeg, n - sg * kSeg < kSeg ? n - sg * kSeg : kSeg,
		                here.q, meta_nseq(ms), meta_nlit(ms), lit + chunk * chunk_bytes + off + S.base[sg],
		                S.starts[warp], S.ends[warp], S.out[warp], lane);
	}
}

#endif
