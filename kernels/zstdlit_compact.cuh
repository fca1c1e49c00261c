// zstdlit_compact.cuh: the literals' packing (zl_compact): each block
// that keeps its matches has its bytes outside them packed, in order, at
// the start of its room in the scratch copy, where zl_seq wrote the
// sequences section after them. Included by zstdlit.cuh inside namespace
// zl, after zstdlit_seq.cuh, whose SlotRegs loads a segment's sequences.

#ifndef ZSPOOL_ZSTDLIT_COMPACT_CUH
#define ZSPOOL_ZSTDLIT_COMPACT_CUH

// CompactShared: each segment's place in the block's literals, and for
// the segment a warp is packing, where each literal run starts in the
// segment and in the output (run k is the trailing one; dst[k + 1] is a
// bound past every literal), and, for compact_by_runs, the gathered
// literals before they are stored.
constexpr int kCompactWarps = kSegsPerBlock / 32;
constexpr uint32_t kCompactRun = 16; // consecutive literals a lane gathers (compact_by_runs)
static_assert(kCompactRun == 16, "compact_by_runs packs a lane's literals as one uint4");
struct CompactShared {
	uint32_t base[kSegsPerBlock];
	uint32_t meta[kSegsPerBlock];
	uint32_t scan[kSegsPerBlock / 32];
	uint16_t src[kCompactWarps][kSlotSeqs + 1];
	uint16_t dst[kCompactWarps][kSlotSeqs + 2];
	alignas(16) uint8_t out[kCompactWarps][kSeg];
};

// run_of is the run of literal t of a segment: the last of runs 0..k
// (their output starts in dst) to start at or before t, which skips the
// empty runs there.
__device__ __forceinline__ uint32_t run_of(const uint16_t *dst, uint32_t k, uint32_t t)
{
	uint32_t lo = 0, hi = k;
	while (lo < hi) {
		const uint32_t mid = (lo + hi + 1) >> 1;
		if (dst[mid] <= t)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

// compact_by_search stores literal t of a segment (sp, run starts src
// and dst as compact_segment fills them) at d[t], each lane taking every
// 32nd literal and finding its run by binary search, so that loads and
// stores are consecutive across the warp. The better way where runs are
// short: dim frames' segments hold dozens of matches and a few literals.
__device__ __forceinline__ void compact_by_search(const uint8_t *__restrict__ sp, uint32_t k, uint32_t nlit,
                                                  uint8_t *__restrict__ d, const uint16_t *src, const uint16_t *dst,
                                                  unsigned lane)
{
	for (uint32_t t = lane; t < nlit; t += 32) {
		const uint32_t lo = run_of(dst, k, t);
		d[t] = sp[src[lo] + (t - dst[lo])];
	}
}

// compact_by_runs is compact_by_search for long runs: each lane gathers
// kCompactRun consecutive literals, searching for the run of the first and
// walking on from there, all its loads out before the first store waits
// on one, into out, which the warp then stores in order. On bright cells,
// a few long runs a segment, the search for every literal and the store
// waiting on each load cost more than the copy.
__device__ __forceinline__ void compact_by_runs(const uint8_t *__restrict__ sp, uint32_t k, uint32_t nlit,
                                                uint8_t *__restrict__ d, const uint16_t *src, const uint16_t *dst,
                                                uint8_t *out, unsigned lane)
{
	for (uint32_t t = lane * kCompactRun; t < nlit; t += 32 * kCompactRun) {
		uint32_t lo = run_of(dst, k, t);
		uint32_t next = dst[lo + 1], at = src[lo] - dst[lo];
		uint32_t v[kCompactRun];
#pragma unroll
		for (uint32_t i = 0; i < kCompactRun; i++) {
			const uint32_t ti = t + i;
			while (ti >= next) { // into the next non-empty run; dst[k + 1] bounds the walk
				lo++;
				at = src[lo] - dst[lo];
				next = dst[lo + 1];
			}
			v[i] = ti < nlit ? __ldg(sp + ti + at) : 0;
		}
		uint4 w;
		w.x = v[0] | v[1] << 8 | v[2] << 16 | v[3] << 24;
		w.y = v[4] | v[5] << 8 | v[6] << 16 | v[7] << 24;
		w.z = v[8] | v[9] << 8 | v[10] << 16 | v[11] << 24;
		w.w = v[12] | v[13] << 8 | v[14] << 16 | v[15] << 24;
		*reinterpret_cast<uint4 *>(out + t) = w; // out has room past nlit
	}
	__syncwarp();
	for (uint32_t t = lane; t < nlit; t += 32)
		d[t] = out[t];
}

// kCompactRunsFrom is the average run, in literals, from which
// compact_segment gathers by runs. Measured on an H100 (zl_compact, ms a
// GiB, level 1: dim, bright, flat, 8-bit): by search alone 1.15, 3.02,
// 2.73, 2.19; by runs from 16 literals 1.18, 2.61, 1.46, 2.14; from 8
// 1.18, 2.33, 1.46, 2.08; from 4 1.18, 1.98, 1.45, 1.93. By runs alone,
// dim frames took 2.7.
constexpr uint32_t kCompactRunsFrom = 4;

// compact_segment packs one segment's nlit literals (the segment at sp, its
// k packed sequences in slot, lane + 32r's in slot[r]) to d. One warp:
// the run starts come from two scans, then the literals are gathered by
// search or by runs, whichever suits the segment's average run.
__device__ void compact_segment(const uint8_t *__restrict__ sp, const uint32_t (&slot)[kSlotRounds], uint32_t k,
                                uint32_t nlit, uint8_t *__restrict__ d, uint16_t *src, uint16_t *dst, uint8_t *out,
                                unsigned lane)
{
	uint32_t s0 = 0, d0 = 0;
#pragma unroll
	for (uint32_t r = 0; r < kSlotRounds; r++) {
		const uint32_t j0 = 32 * r;
		if (j0 >= k)
			break;
		const uint32_t j = j0 + lane;
		const uint32_t q = j < k ? slot[r] : 0;
		uint32_t ts, td;
		const uint32_t es = warp_excl_scan(seq_ll(q) + seq_ml(q), lane, ts);
		const uint32_t ed = warp_excl_scan(seq_ll(q), lane, td);
		if (j < k) {
			src[j] = (uint16_t)(s0 + es);
			dst[j] = (uint16_t)(d0 + ed);
		}
		s0 += ts;
		d0 += td;
	}
	if (lane == 0) {
		src[k] = (uint16_t)s0; // the trailing run
		dst[k] = (uint16_t)d0;
		dst[k + 1] = (uint16_t)kSeg;
	}
	__syncwarp();
	if (nlit >= kCompactRunsFrom * (k + 1))
		compact_by_runs(sp, k, nlit, d, src, dst, out, lane);
	else
		compact_by_search(sp, k, nlit, d, src, dst, lane);
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
		compact_segment(src + chunk * chunk_bytes + off + (uint64_t)sg * kSeg, here.q, meta_nseq(ms),
		                meta_nlit(ms), lit + chunk * chunk_bytes + off + S.base[sg], S.src[warp], S.dst[warp],
		                S.out[warp], lane);
	}
}

#endif
