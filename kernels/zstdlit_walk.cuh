// zstdlit_walk.cuh: the seeds' walk (seed_blocks, with its cp.async
// helpers), which zl_seed, zl_seed2 and zl_seed3 in zstdlit.cuh run. It
// holds the walk's design notes and measurements; zstdlit_seed.cuh holds
// what the walk hands on (PendingSeed) and level 3's chunk and own-segment
// candidates. Included by zstdlit.cuh at file scope, after namespace zl's
// other parts, where the walk's text stood before it had a file of its own.

#ifndef ZSPOOL_ZSTDLIT_WALK_CUH
#define ZSPOOL_ZSTDLIT_WALK_CUH

// zl_seed: one CTA per block: walks the block's
// segments in order with the block's table of latest positions (2^bits
// entries of key-byte hashes, in dynamic shared memory; key and bits are
// the level's rung), and gives every position of a segment the table's
// entry from before the segment's own positions went in: seed[p],
// block-relative, or kNoSeed. An entry whose key bytes differ from the
// position's is written as kNoSeed: the parse would turn it down, and
// finds it out here without a load of its own. At the fast rung a seed
// also carries its match's length in its first kSeedMeasured bytes
// (PendingSeed::finish). Blocks the parse skips are skipped.
//
// An entry is the position + 1 above kSeedTagBits more bits of its hash
// (atomicMax still keeps the latest position), and only an entry whose
// tag agrees has its key bytes loaded and compared: on bright camera
// frames those loads, one for every position, kept L2 73% busy and were
// what the warps waited on.
//
// The walk is two barriers a segment (between the segment's look-ups and
// its insertions, and after the insertions), and the warps wait at them
// more than they work, so nothing between two barriers waits on global
// memory: a segment's bytes reach shared memory three segments ahead (by
// cp.async, or in zl_seed from registers; seed_blocks says why), and a
// candidate's key bytes, loaded in one segment's step, are compared in
// the next (PendingSeed).
//
// zl_seed is the fast rung's, whose seeds carry their measured lengths;
// zl_seed3 the strong rung's, whose do not (kSeedMeasured says why). The
// rung's key length and table bits are template arguments: the hash's
// shifts and masks then fold into its instructions, and at level 1 the
// walk issues an instruction in 83% of the cycles (Nsight Compute), so
// every instruction saved a position is time (the seeds 4.0-4.7% faster
// at level 1, 0.7-1.4% at level 3; H100, 2026-11-26).
//
// zl_seed2 is zl_seed on the grid (zstdlit's Options.Grid 2, the fast
// rung on an array of known element size): a thread a grid position (on
// 16-bit data the pixels' high bytes; the phase is its argument), half the threads, and
// the seeds written a grid position each (seed_index). It
// issues in 58% of the cycles, not 83%: three 64 KiB tables an SM leave
// it 24 warps, and they wait at the walk's barriers. Its seeds also say
// how many bytes before them agree with those before their position
// (kSeedBack), for the parse's backward extension.
namespace zl {
// cp_async4 copies the got bytes (0 to 4) at src to dst in shared memory,
// zeros after them, asynchronously (cp.async); cp_commit closes a group of
// copies, and cp_wait<N> waits until at most N groups are in flight.
__device__ __forceinline__ void cp_async4(uint32_t *dst, const void *src, uint32_t got)
{
	const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
	asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(got) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

template <bool Measure, uint32_t key, uint32_t bits, uint32_t grid>
__device__ __forceinline__ void seed_blocks(const uint8_t *src, uint64_t chunk_bytes, uint64_t bpc, uint64_t n_blocks,
                                            const uint32_t *nonfill, uint32_t *seed, uint32_t phase)
{
	extern __shared__ uint32_t tab[]; // 1 << bits entries: position + 1 and tag, 0 for none
	// a segment's bytes and the next 8 (12 to measure)
	constexpr uint32_t kWords = zl::kSegWords + (Measure ? 3 : 2);
	static_assert(!Measure || zl::kSeedMeasured == 12, "zl_seed measures 12 bytes: three words and a shift");
	constexpr uint32_t kThreads = zl::kSeedThreads / grid;
	// On the grid the parse extends matches backwards, and the seeds
	// say how far (kSeedBack). Then word 0 of each buffer is a pad, never
	// compared, so that the word before a segment's first needs no test;
	// the segment's words follow.
	constexpr bool Back = Measure && grid > 1;
	constexpr uint32_t kPad = Back ? 1 : 0;
	// How a segment's words reach shared memory ahead of its step, one
	// word a thread. zl_seed2 and zl_seed3 (kAsync) copy them by cp.async,
	// three segments ahead, through four buffers: the copies hold no
	// registers, and the step waits on no load of its own before the
	// barrier that ends it. Loaded into registers two segments ahead and
	// stored after the look-ups, that store waited on loads before the
	// barrier in 9% of zl_seed2's stall samples (Nsight Compute, dim
	// frames). Side by side with that (H200, the same bytes), the seeds at
	// level 1 took 4.23 -> 4.11 ms a GiB on dim frames, 3.73 -> 3.54 on
	// bright cells, 3.04 -> 2.68 on flat fields, 3.99 -> 3.79 on 8-bit
	// frames and 3.15 -> 2.90 on saturated ones (and as much in a second
	// call), at level 3 20.71 -> 18.92, 22.55 -> 20.91, 21.87 -> 20.29,
	// 22.01 -> 20.37 and 22.50 -> 20.86; the kernels 0.6 to 3.2% faster
	// at level 1 (two calls), 3.6 to 4.5% at level 3.
	//
	// zl_seed (kEarly), whose 40 registers were measured with this walk
	// and not with cp.async, loads them into registers three segments
	// ahead and stores them at the top of the step before: its seeds took
	// 6.21 -> 5.66 ms a GiB on dim frames, 5.41 -> 5.08 on bright cells,
	// 4.24 -> 3.94 on flat fields, 6.00 -> 5.52 on 8-bit frames and 4.63
	// -> 4.30 on saturated ones against two ahead, stored after the
	// look-ups; the same walk made zl_seed2's and zl_seed3's slower.
	constexpr bool kEarly = grid == 1 && Measure;
	constexpr bool kAsync = !kEarly;
	constexpr uint32_t kBufs = kAsync ? 4 : 2;
	__shared__ uint32_t seg[kBufs][kWords + kPad];
	static_assert(zl::kSeedThreads == zl::kSeg, "zl_seed: a thread a position of the segment");
	static_assert(kWords <= kThreads, "zl_seed: a thread loads one word of a segment");
	constexpr uint32_t kTagMask = (1u << zl::kSeedTagBits) - 1;
	const unsigned t = threadIdx.x;
	// the thread's position in each segment: on the grid, from its phase
	// (off it a constant 0, so that zl_seed and zl_seed3 fold it away)
	const uint32_t q = grid * t + (grid > 1 ? phase : 0);
	const uint32_t hm = zl::key_hi(key);
	if (Back && t < kBufs)
		seg[t][0] = 0;
	for (uint64_t bi = blockIdx.x; bi < n_blocks; bi += gridDim.x) {
		uint64_t chunk, off;
		uint32_t n;
		zl::block_geometry(chunk_bytes, (uint32_t)bpc, bi, chunk, off, n);
		if (zl::block_skipped(nonfill, chunk, n))
			continue;
		for (uint32_t h = t; h < (1u << bits); h += kThreads)
			tab[h] = 0;
		const uint8_t *blk = src + chunk * chunk_bytes + off;
		uint32_t *out = seed + zl::seed_index<grid>(chunk, chunk_bytes, off);
		// word is thread t's word of the segment at a: bytes past the
		// block read as 0. It is chunk_word but for its early return past
		// the block: written as chunk_word (and t < kWords) the seeds took
		// 0.15–0.27 ms a GiB longer at both rungs (H100, 2026-11-26).
		const auto word = [&](uint32_t a) -> uint32_t {
			const uint32_t at = a + 4 * t;
			if (t >= kWords || at >= n)
				return 0;
			if (at + 4 <= n)
				return zl::gword(blk + at);
			uint32_t v = 0;
			for (uint32_t b = 0; at + b < n; b++)
				v |= (uint32_t)blk[at + b] << (8 * b);
			return v;
		};
		// put stores v as thread t's word of buffer b.
		const auto put = [&](uint32_t b, uint32_t v) {
			if (t < kWords)
				seg[b][t + kPad] = v;
		};
		// fill puts thread t's word of the segment at a into buffer b (by
		// cp.async where the block is aligned, else at once).
		const bool aligned = ((uintptr_t)blk & 3) == 0;
		const auto fill = [&](uint32_t a, uint32_t b) {
			if (t >= kWords)
				return;
			uint32_t *dst = &seg[b][t + kPad];
			const uint32_t at = a + 4 * t;
			if (aligned) {
				const uint32_t got = at >= n ? 0 : n - at >= 4 ? 4 : n - at;
				zl::cp_async4(dst, blk + (got != 0 ? at : 0), got);
			} else {
				*dst = word(a);
			}
		};
		uint32_t next = 0, next2 = 0; // kEarly's: the next two segments' words
		if constexpr (kAsync) {
			fill(0, 0);
			zl::cp_commit();
			fill(zl::kSeg, 1);
			zl::cp_commit();
			fill(2 * zl::kSeg, 2);
			zl::cp_commit();
			zl::cp_wait<2>();
		} else {
			put(0, word(0));
			next = word(zl::kSeg);
			next2 = word(2 * zl::kSeg);
		}
		zl::PendingSeed<Measure, Back> pend; // thread t's position of the segment before
		pend.none();
		__syncthreads();
		// Two segments a turn on the grid and at the strong rung: the
		// walk's pending seed and words then keep their registers
		// instead of being moved at the loop's back edge (measured when
		// the walk had two buffers, each copy's a constant). zl_seed2's
		// instructions a position fell and the seeds ran 0.4 ms a GiB
		// faster (dim frames 4.91 -> 4.49, bright cells 4.45 -> 4.06),
		// zl_seed3's 1.0-1.3 (dim 18.6 -> 17.6, bright 21.0 -> 19.7);
		// H100, two rounds each. zl_seed, whose three CTAs of 512 threads
		// an SM leave it 42 registers, spilled.
#pragma unroll(grid > 1 || !Measure ? 2 : 1)
		for (uint32_t a = 0, s = 0; a < n; a += zl::kSeg, s++) {
			// segment s + 3's words: kEarly stores them at the top of step
			// s + 2, kAsync waits on their copy at its end
			uint32_t ahead = 0;
			if constexpr (kAsync) {
				fill(a + 3 * zl::kSeg, (s + 3) & 3);
				zl::cp_commit();
			} else {
				ahead = word(a + 3 * zl::kSeg);
			}
			const uint32_t len = n - a < zl::kSeg ? n - a : zl::kSeg;
			const uint32_t *sw = seg[s % kBufs] + kPad;
			pend.finish(out, hm);
			if constexpr (!kAsync) {
				// The next segment's buffer was last read before the
				// barrier that ended the segment before.
				put((s + 1) % kBufs, next);
				next = next2;
				next2 = ahead;
			}
			const uint32_t r = (q & 3) * 8;
			const uint32_t w0 = sw[q >> 2], w1 = sw[(q >> 2) + 1], w2 = sw[(q >> 2) + 2];
			const uint32_t lo = __funnelshift_r(w0, w1, r), hi8 = __funnelshift_r(w1, w2, r), hi = hi8 & hm;
			const uint32_t m2 = Measure ? __funnelshift_r(w2, sw[(q >> 2) + 3], r) : 0;
			// The measure takes the position's first 12 bytes, the key check its key.
			uint32_t tag;
			const uint32_t h = zl::tagged_hash(lo, hi, bits, zl::kSeedTagBits, tag);
			const bool eligible = q + key <= len;
			if (eligible) {
				const uint32_t e = tab[h];
				const uint32_t c = e != 0 && (e & kTagMask) == tag ? (e >> zl::kSeedTagBits) - 1 : zl::kNoSeed;
				pend.start(blk, c, (a + q) / grid, lo, Measure ? hi8 : hi, m2, len - q, q, sw, w0);
			} else {
				pend.none();
			}
			__syncthreads();
			if (eligible)
				atomicMax(&tab[h], (a + q + 1) << zl::kSeedTagBits | tag);
			if constexpr (kAsync)
				zl::cp_wait<2>(); // the next segment's copy, before the barrier shows it
			__syncthreads();
		}
		pend.finish(out, hm);
		if constexpr (kAsync)
			zl::cp_wait<0>(); // the copies past the block's end, before the next block's
	}
}
} // namespace zl
#endif
