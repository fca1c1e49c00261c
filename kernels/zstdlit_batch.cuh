// zstdlit_batch.cuh: one turn of the fast rung's parse (parse_segment in
// zstdlit_parse.cuh): a batch of grid positions' keys and hashes, their
// seeds and own candidates, which of them are worth a look, the match the
// first of those leads to and where it starts once extended backwards.
// The strong rung's parse (parse_segment_own) takes its seeds and
// measures their matches with the same load_seeds and seed_match_len.
// Included by zstdlit_parse.cuh inside namespace zl, after
// zstdlit_segment.cuh (SegView).

#ifndef ZSPOOL_ZSTDLIT_BATCH_CUH
#define ZSPOOL_ZSTDLIT_BATCH_CUH

// seed_match_len is the length of the common prefix of blk[c..] (global
// memory, an earlier segment's bytes, c negative in an earlier block) and
// the lane's segment from i, capped at the segment's end n, its first l
// bytes known to agree.
template <int HB>
__device__ __forceinline__ uint32_t seed_match_len(const SegView<HB> &V, const uint8_t *__restrict__ blk, uint32_t c,
                                                   uint32_t i, uint32_t n, uint32_t l)
{
	const uint8_t *q = blk + (int32_t)c;
	while (i + l + 8 <= n) {
		const uint32_t x0 = gword(q + l) ^ V.word(i + l), x1 = gword(q + l + 4) ^ V.word(i + l + 4);
		if (x0 != 0)
			return l + (uint32_t)(__ffs(x0) - 1) / 8;
		if (x1 != 0)
			return l + 4 + (uint32_t)(__ffs(x1) - 1) / 8;
		l += 8;
	}
	while (i + l < n && q[l] == V.byte(i + l))
		l++;
	return l;
}

// batch_keys sets x[k] and y[k] to the words at the k-th grid position
// from i and 4 bytes on, k < B (the caller's batch, batch_of).
template <int HB, uint32_t G, uint32_t B>
__device__ __forceinline__ void batch_keys(const SegView<HB> &V, uint32_t i, uint32_t x[B], uint32_t y[B])
{
	if constexpr (G == 1) {
		V.template window<B>(i, x);
		V.template window<B>(i + 4, y);
	} else {
		V.template window2<B>(i, x, y);
	}
}

// batch_hashes sets x, y (batch_keys) and h, the seed_hash of each of the
// batch's keys (hm masks its bytes of the second word), from i on.
template <int HB, uint32_t G, uint32_t B>
__device__ __forceinline__ void batch_hashes(const SegView<HB> &V, uint32_t i, uint32_t hm, uint32_t x[B],
                                             uint32_t y[B], uint32_t h[B])
{
	batch_keys<HB, G, B>(V, i, x, y);
#pragma unroll
	for (uint32_t k = 0; k < B; k++)
		h[k] = seed_hash(x[k], y[k] & hm, HB);
}

// set_batch puts the batch's positions from i below to into the
// segment's table, by their hashes h.
template <int HB, uint32_t G, uint32_t B>
__device__ __forceinline__ void set_batch(const SegView<HB> &V, const uint32_t h[B], uint32_t i, uint32_t to)
{
#pragma unroll
	for (uint32_t k = 0; k < B; k++)
		if (i + G * k < to)
			V.set(h[k], i + G * k);
}

// load_seeds loads the seeds of the batch's B grid positions from i of a
// segment of n bytes (seed holds the segment's, one a grid position),
// kNoSeed for those without a whole key before its end.
template <uint32_t G, uint32_t B>
__device__ __forceinline__ void load_seeds(const uint32_t *__restrict__ seed, uint32_t i, uint32_t n, uint32_t key,
                                           uint32_t sc[B])
{
#pragma unroll
	for (uint32_t k = 0; k < B; k++)
		sc[k] = i + G * k + key <= n ? __ldg(seed + i / G + k) : kNoSeed;
}

// batch_look fills c with the batch's own candidates from grid position
// i (the segment table's entry for each hash h[k], or the batch's own
// latest earlier position with that hash, which is newer), and w and v
// with each candidate's first two words; it returns the positions worth a
// look, a bit each: those among the first cnt whose own candidate shares
// the key's bytes (x[k] and y[k], under mmask) or that have a seed (sc[k];
// Strict, one whose measured length reaches sneed). parse_segment's.
template <int HB, uint32_t G, uint32_t B, bool Strict>
__device__ __forceinline__ uint32_t batch_look(const SegView<HB> &V, uint32_t i, uint32_t cnt, const uint32_t h[B],
                                               const uint32_t x[B], const uint32_t y[B], const uint32_t sc[B],
                                               uint32_t mmask, uint32_t sneed, uint32_t c[B], uint32_t w[B],
                                               uint32_t v[B])
{
#pragma unroll
	for (uint32_t k = 0; k < B; k++)
		c[k] = V.get(h[k]);
#pragma unroll
	for (uint32_t k = 1; k < B; k++)
#pragma unroll
		for (uint32_t j = 0; j < k; j++)
			c[k] = h[j] == h[k] ? i + G * j : c[k];
	// All loads before the stores: the compiler cannot tell the table
	// from the bytes, and would order each load after the last store.
#pragma unroll
	for (uint32_t k = 0; k < B; k++) {
		w[k] = V.word(c[k] != kNoPos ? c[k] : 0);
		v[k] = V.word(c[k] != kNoPos ? c[k] + 4 : 0);
	}
	// The tests are combined bitwise, not by && and ||: nvcc made each
	// short circuit a branch, four and a reconvergence a position, and
	// with four warps an SM (level 3) the parse waited on those branches
	// in 13% of its stall samples.
	uint32_t look = 0;
#pragma unroll
	for (uint32_t k = 0; k < B; k++) {
		const bool own = (c[k] != kNoPos) & (w[k] == x[k]) & (((v[k] ^ y[k]) & mmask) == 0);
		const bool seeded = (sc[k] != kNoSeed) & (!Strict | (seed_known<G>(sc[k]) >= sneed));
		look |= (uint32_t)((k < cnt) & (own | seeded)) << k;
	}
	return look;
}

// BatchMatch is the match a batch's look-ups lead to: at its at-th grid
// position, l bytes (0 for none) at offset off, its candidate in the
// segment (in_seg) or a seed's, and for a seed the bytes before it known
// to agree (kSeedBackShift) and whether more may.
struct BatchMatch {
	uint32_t at, l, off, back;
	bool in_seg, back_more;
};

// batch_match looks at the batch's positions in look (a bit each, the
// first first) from grid position i of the lane's segment of n bytes, and
// returns the first whose match reaches mm: its own candidate c[k] (whose
// words w[k] and v[k] are compared with the position's, x[k] and y[k],
// under mmask) first, then its seed sc[k]. parse_segment's.
template <int HB, uint32_t G, uint32_t B>
__device__ __forceinline__ BatchMatch batch_match(const SegView<HB> &V, uint32_t look, uint32_t i, const uint32_t c[B],
                                                  const uint32_t sc[B], const uint32_t w[B], const uint32_t x[B],
                                                  const uint32_t v[B], const uint32_t y[B], uint32_t n, uint32_t mm,
                                                  uint32_t mmask, const uint8_t *__restrict__ blk, uint32_t a)
{
	uint32_t at = 0, l = 0, off = 0;
	bool in_seg = true;
	uint32_t back = 0;
	bool back_more = true;
	while (look != 0) {
		at = (uint32_t)(__ffs(look) - 1);
		look &= look - 1;
		uint32_t cand = c[0], sd = sc[0], wa = w[0], xa = x[0], va = v[0], ya = y[0];
#pragma unroll
		for (uint32_t k = 1; k < B; k++)
			if (at == k) {
				cand = c[k];
				sd = sc[k];
				wa = w[k];
				xa = x[k];
				va = v[k];
				ya = y[k];
			}
		const uint32_t p = i + G * at;
		l = 0;
		if (cand != kNoPos && wa == xa && ((va ^ ya) & mmask) == 0) {
			l = V.match_len(cand + 4, p + 4, n) + 4;
			off = p - cand;
			in_seg = true;
		}
		if (l < mm && sd != kNoSeed) {
			// zl_seed's seeds come with their first bytes measured (the
			// fast rung has no chunk table, whose seeds do not).
			const uint32_t sp = sd & kSeedPosMask;
			const uint32_t known = seed_known<G>(sd);
			const uint32_t ls =
			    known < kSeedMeasured || known == n - p ? known : seed_match_len(V, blk, sp, p, n, known);
			if (ls >= mm) {
				l = ls;
				off = a + p - sp;
				in_seg = false;
				if constexpr (G > 1) {
					back = sd >> kSeedBackShift;
					back_more = back == kSeedBack;
				}
			}
		}
		if (l >= mm)
			break;
		l = 0;
	}
	return BatchMatch{at, l, off, back, in_seg, back_more};
}

// match_start is where match m, found at p on the grid, starts once
// extended backwards (zstdlit's extendBack) over the candidate's bytes
// before it that agree, down to lit (the segment's literals' start) at
// most: the segment's own from p - off, or the block's (global memory)
// from a + p - off, past the seed's known back count.
template <int HB>
__device__ __forceinline__ uint32_t match_start(const SegView<HB> &V, const BatchMatch &m, uint32_t p, uint32_t lit,
                                                const uint8_t *__restrict__ blk, uint32_t a)
{
	uint32_t start = p;
	if (m.in_seg) {
		while (start > lit && start - 1 >= m.off && V.byte(start - 1) == V.byte(start - 1 - m.off))
			start--;
	} else {
		start -= m.back < start - lit ? m.back : start - lit;
		if (m.back_more)
			while (start > lit && a + start - 1 >= m.off && V.byte(start - 1) == blk[a + start - 1 - m.off])
				start--;
	}
	return start;
}

#endif
