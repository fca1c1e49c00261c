// zstdlit_segment.cuh: a parse warp's segments in shared memory, their
// bytes and their tables of latest positions, one layout a rung, and the
// lane's view of them. Included by zstdlit_parse.cuh inside namespace zl,
// after the parse's constants.

#ifndef ZSPOOL_ZSTDLIT_SEGMENT_CUH
#define ZSPOOL_ZSTDLIT_SEGMENT_CUH

// A segment's table of latest positions, for the warp's 32 lanes, each
// lane's entries in a column of its own (word k of lane l is w[k][l]), so
// that every lane always reads its own bank. An entry is 9 bits; a
// cleared table (every word ones) holds kNoPos everywhere.
//
// Packed3Table keeps three entries a word: one load a look-up, the fast
// rung's 2^7 entries in 43 words.
template <int HB> struct Packed3Table {
	static constexpr uint32_t kWords = ((1u << HB) + 2) / 3;
	uint32_t w[kWords][kParseThreads];
	__device__ __forceinline__ void clear(unsigned lane)
	{
		for (uint32_t k = 0; k < kWords; k++)
			w[k][lane] = 0xFFFFFFFFu;
	}
	__device__ __forceinline__ uint16_t get(uint32_t h, unsigned lane, uint32_t) const
	{
		return (uint16_t)((w[h / 3][lane] >> (9 * (h % 3))) & 0x1FF);
	}
	__device__ __forceinline__ void set(uint32_t h, unsigned lane, uint32_t pos)
	{
		uint32_t &x = w[h / 3][lane];
		const uint32_t sh = 9 * (h % 3);
		x = (x & ~(0x1FFu << sh)) | pos << sh;
	}
};


// GridTable is the grid's: an entry is the position's grid index
// (position / 2) in a byte, 0xFF for none, which is never an eligible
// position's (510 and 511 have no whole key before the segment's end);
// a look-up adds the grid's phase back (zstdlit's GridPhase: on 16-bit
// data the pixels' high bytes). A look-up
// is a load and a shift, an entry a byte store, and the 2^6 entries take
// 16 words a lane: with the segment's bytes, 18 KiB a warp, so that
// twelve warps fit an SM where ten did.
template <int HB> struct GridTable {
	static constexpr uint32_t kWords = (1u << HB) / 4;
	uint32_t w[kWords][kParseThreads];
	__device__ __forceinline__ void clear(unsigned lane)
	{
		for (uint32_t k = 0; k < kWords; k++)
			w[k][lane] = 0xFFFFFFFFu;
	}
	__device__ __forceinline__ uint16_t get(uint32_t h, unsigned lane, uint32_t phase) const
	{
		const uint32_t b = (w[h >> 2][lane] >> ((h & 3) * 8)) & 0xFF;
		return b == 0xFF ? kNoPos : (uint16_t)(2 * b + phase);
	}
	__device__ __forceinline__ void set(uint32_t h, unsigned lane, uint32_t pos)
	{
		reinterpret_cast<uint8_t *>(&w[h >> 2][lane])[h & 3] = (uint8_t)(pos >> 1);
	}
};
static_assert((kSeg - 2) / 2 == 0xFF, "GridTable: 0xFF must be the index of the last two positions");

// TableOf is the layout of a rung's table: the grid's a byte an
// entry, three a word for the fast rung's (where one load a look-up
// wins). The strong rung's parse keeps none (ParseShared below).
template <int HB> struct TableOf {
	using type = Packed3Table<HB>;
};
template <> struct TableOf<kGridHashBits> {
	using type = GridTable<kGridHashBits>;
};
// TableOf tells the rungs apart by their bits: the grid's byte entries
// would drop the low bit of a position off the grid.
static_assert(kGridHashBits != kFastHashBits && kGridHashBits != kStrongHashBits, "TableOf: each rung's bits its own");

// ParseShared holds, for each of the warp's 32 segments, its bytes and
// its table, both interleaved by lane as the tables are. At the fast rung
// 21 KiB a CTA, so that ten of them (warps) fit an SM: the parse waits on
// its loads and wants warps to switch to. The strong rung's, bytes alone,
// takes 16 KiB, from dynamic shared memory.
constexpr uint32_t kSegWords = kSeg / 4;
template <int HB> struct ParseShared {
	uint32_t data[kSegWords][kParseThreads];
	typename TableOf<HB>::type tab;
};
// The strong rung's parse keeps no table: zl_own3 hands it its own
// candidates in the seed words. Its 2^10 entries, a byte and a bit each,
// took 36 KiB a warp (52 with the segments' bytes), four warps an SM;
// without them thirteen fit.
template <> struct ParseShared<kStrongHashBits> {
	uint32_t data[kSegWords][kParseThreads];
};
static_assert(sizeof(ParseShared<kFastHashBits>) <= 48 * 1024, "zl_parse's shared memory exceeds the static limit");
static_assert(sizeof(ParseShared<kStrongHashBits>) == kSeg * kParseThreads,
              "zl_parse3's shared memory is what the host asks for (litParse3Shared)");

// SegView reads one lane's segment out of ParseShared; phase is the
// grid's (0 off the grid).
template <int HB> struct SegView {
	ParseShared<HB> &S;
	unsigned lane;
	uint32_t phase;
	__device__ __forceinline__ uint32_t byte(uint32_t pos) const
	{
		return (S.data[pos >> 2][lane] >> ((pos & 3) * 8)) & 0xff;
	}
	// word is bytes pos..pos+3, little-endian; pos+4 ≤ the segment's length.
	// Branch-free, so that several can be in flight at once.
	__device__ __forceinline__ uint32_t word(uint32_t pos) const
	{
		const uint32_t a = pos >> 2, b = a + 1 < kSegWords ? a + 1 : a;
		return __funnelshift_r(S.data[a][lane], S.data[b][lane], (pos & 3) * 8);
	}
	// window sets x[k] to word(pos+k), k < kBatch. The words past the
	// segment's end are stale but only feed positions the caller skips.
	template <uint32_t B = kBatch> __device__ __forceinline__ void window(uint32_t pos, uint32_t x[B]) const
	{
		const uint32_t a = pos >> 2, r = (pos & 3) * 8;
		uint32_t w[B / 4 + 2], sh[B / 4 + 1];
#pragma unroll
		for (uint32_t k = 0; k < B / 4 + 2; k++)
			w[k] = S.data[a + k < kSegWords ? a + k : kSegWords - 1][lane];
#pragma unroll
		for (uint32_t k = 0; k < B / 4 + 1; k++)
			sh[k] = __funnelshift_r(w[k], w[k + 1], r);
#pragma unroll
		for (uint32_t k = 0; k < B; k++)
			x[k] = (k & 3) == 0 ? sh[k / 4] : __funnelshift_r(sh[k / 4], sh[k / 4 + 1], 8 * (k & 3));
	}
	// window2 sets x[k] to word(pos+2k) and y[k] to word(pos+2k+4), k <
	// B: the grid's batch, from one window of words.
	template <uint32_t B> __device__ __forceinline__ void window2(uint32_t pos, uint32_t x[B], uint32_t y[B]) const
	{
		static_assert(B % 2 == 0, "window2: an even batch");
		constexpr uint32_t kSh = B / 2 + 2; // words at pos, pos+4, ..., pos+4*(kSh-1)
		const uint32_t a = pos >> 2, r = (pos & 3) * 8;
		uint32_t w[kSh + 1], sh[kSh];
#pragma unroll
		for (uint32_t k = 0; k < kSh + 1; k++)
			w[k] = S.data[a + k < kSegWords ? a + k : kSegWords - 1][lane];
#pragma unroll
		for (uint32_t k = 0; k < kSh; k++)
			sh[k] = __funnelshift_r(w[k], w[k + 1], r);
		uint32_t z[B + 2]; // z[j] = word(pos+2j)
#pragma unroll
		for (uint32_t j = 0; j < B + 2; j++)
			z[j] = (j & 1) == 0 ? sh[j / 2] : __funnelshift_r(sh[j / 2], sh[j / 2 + 1], 16);
#pragma unroll
		for (uint32_t k = 0; k < B; k++) {
			x[k] = z[k];
			y[k] = z[k + 2];
		}
	}
	__device__ __forceinline__ uint16_t get(uint32_t h) const { return S.tab.get(h, lane, phase); }
	__device__ __forceinline__ void set(uint32_t h, uint32_t pos) const { S.tab.set(h, lane, pos); }
	// match_len is the length of the common prefix of c.. and i.. (c < i),
	// capped at the segment's end n.
	__device__ __forceinline__ uint32_t match_len(uint32_t c, uint32_t i, uint32_t n) const
	{
		uint32_t l = 0;
		// Eight bytes a step: four independent loads a side in flight.
		while (i + l + 8 <= n) {
			const uint32_t x0 = word(c + l) ^ word(i + l), x1 = word(c + l + 4) ^ word(i + l + 4);
			if (x0 != 0)
				return l + (uint32_t)(__ffs(x0) - 1) / 8;
			if (x1 != 0)
				return l + 4 + (uint32_t)(__ffs(x1) - 1) / 8;
			l += 8;
		}
		while (i + l + 4 <= n) {
			const uint32_t x = word(c + l) ^ word(i + l);
			if (x != 0)
				return l + (uint32_t)(__ffs(x) - 1) / 8;
			l += 4;
		}
		while (i + l < n && byte(c + l) == byte(i + l))
			l++;
		return l;
	}
};

// load_segment copies the n bytes at p into the lane's columns of S.
template <int HB>
__device__ void load_segment(const uint8_t *__restrict__ p, uint32_t n, ParseShared<HB> &S, unsigned lane)
{
	if (((uintptr_t)p & 15) == 0) {
		const uint4 *v = reinterpret_cast<const uint4 *>(p);
#pragma unroll 8
		for (uint32_t k = 0; k < n / 16; k++) {
			const uint4 x = __ldg(v + k);
			S.data[4 * k][lane] = x.x;
			S.data[4 * k + 1][lane] = x.y;
			S.data[4 * k + 2][lane] = x.z;
			S.data[4 * k + 3][lane] = x.w;
		}
		for (uint32_t k = (n / 16) * 4; k < (n + 3) / 4; k++) {
			uint32_t w = 0;
			for (uint32_t b = 0; b < 4 && 4 * k + b < n; b++)
				w |= (uint32_t)p[4 * k + b] << (8 * b);
			S.data[k][lane] = w;
		}
		return;
	}
	for (uint32_t k = 0; k < (n + 3) / 4; k++) {
		uint32_t w = 0;
		for (uint32_t b = 0; b < 4 && 4 * k + b < n; b++)
			w |= (uint32_t)p[4 * k + b] << (8 * b);
		S.data[k][lane] = w;
	}
}

#endif
