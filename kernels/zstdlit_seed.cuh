// zstdlit_seed.cuh: how the seeds are found: zl_seed's tagged hash and
// its candidates on their way to seed[] (PendingSeed, for seed_blocks in
// zstdlit_walk.cuh), and zl_cseed's table over a chunk's earlier blocks, a part
// a thread block (ChunkPart). The seeds' format is zstdlit_parse.cuh's,
// which is included before this file inside namespace zl.

#ifndef ZSPOOL_ZSTDLIT_SEED_CUH
#define ZSPOOL_ZSTDLIT_SEED_CUH

// tagged_hash is seed_hash's index of bits bits and, in tag, the tb bits
// of the same product below them.
__device__ __forceinline__ uint32_t tagged_hash(uint32_t lo, uint32_t hi, uint32_t bits, uint32_t tb, uint32_t &tag)
{
	const uint64_t x = (((uint64_t)lo | (uint64_t)hi << 32) << 16) * 0xCF1BBCDCB7A56463ull;
	tag = (uint32_t)(x >> (64 - bits - tb)) & ((1u << tb) - 1);
	return (uint32_t)(x >> (64 - bits));
}

// PendingSeed is a candidate of zl_seed's on its way to seed[]: the aligned
// words that hold its first bytes are loaded in one step of the walk and
// compared with the position's in the next, so that the barriers between
// never wait on those loads. A candidate whose key bytes differ is written
// as kNoSeed; with Measure, one whose agree carries the length of its
// match in its first kSeedMeasured bytes, and with Back also how many of
// the bytes before it agree (kSeedBack).
template <bool Measure, bool Back> struct PendingSeed {
	static_assert(Measure || !Back, "PendingSeed: Back measures beside Measure");
	uint32_t c, at;             // the candidate (kNoSeed for none) and its position; at kNoSeed: nothing pending
	uint32_t lo, hi;            // the position's key (bytes 0-3, the rest masked by hm), with Measure its first 8 bytes
	uint32_t m2;                // with Measure, the position's bytes 8-11
	uint32_t cap;               // with Measure, the bytes left in the position's segment, at most kSeedMeasured
	uint32_t x0, x1, x2, x3, r; // the aligned words around the candidate's first bytes, and its shift
	uint32_t pb, xb, bcap;      // with Back: the 4 bytes before the position, the aligned word before x0, the bytes to compare
	__device__ __forceinline__ void none() { at = kNoSeed; }
	// start takes candidate c of position pos, whose key (or first 12
	// bytes) is lo and hi (and m2) and which has left bytes to its
	// segment's end, and loads the candidate's words as gword(blk+c),
	// gword(blk+c+4) and, with Measure, gword(blk+c+8) do. With Back,
	// before is the bytes before the position in its segment, whose words
	// are sw (sw[-1] readable) and the position's word w0: only the
	// bytes before the position inside it are compared.
	__device__ __forceinline__ void start(const uint8_t *__restrict__ blk, uint32_t cand, uint32_t pos, uint32_t klo,
	                                      uint32_t khi, uint32_t k2, uint32_t left, uint32_t before,
	                                      const uint32_t *sw, uint32_t w0)
	{
		c = cand;
		at = pos;
		lo = klo;
		hi = khi;
		m2 = k2;
		if (Measure)
			cap = left < kSeedMeasured ? left : kSeedMeasured;
		if (cand == kNoSeed)
			return;
		const uint8_t *p = blk + cand;
		const uint32_t *w = reinterpret_cast<const uint32_t *>((uintptr_t)p & ~(uintptr_t)3);
		r = (uint32_t)((uintptr_t)p & 3) * 8;
		x0 = __ldg(w);
		x1 = __ldg(w + 1);
		// With Measure, only the words that hold one of the first cap
		// bytes: a word past them may lie past the allocation's end.
		const uint32_t need = r / 8 + (Measure ? cap : 8);
		x2 = need > 8 ? __ldg(w + 2) : 0;
		x3 = Measure && need > 12 ? __ldg(w + 3) : 0;
		if (Back) {
			// The word before x0 only when a byte compared lies in it:
			// those bytes are in the block, so it is in the allocation.
			pb = __funnelshift_r(sw[(before >> 2) - 1], w0, (before & 3) * 8);
			bcap = before < cand ? before : cand;
			bcap = bcap < kSeedBack ? bcap : kSeedBack;
			xb = bcap > r / 8 ? __ldg(w - 1) : 0;
		}
	}
	// finish writes the seed (hm masks the key's bytes of the second word).
	// A candidate's seed is worked out whole and chosen at the end, not
	// through branches on whether its key bytes agree and where its match
	// ends: with four branches a position, finish took a quarter of
	// zl_seed2's instructions and stall samples on dim frames (Nsight
	// Compute, H100). A position without a candidate still leaves at once:
	// on flat fields and saturated 8-bit frames most have none, and working
	// out their seeds too made the seeds 8-9% slower there.
	__device__ __forceinline__ void finish(uint32_t *__restrict__ out, uint32_t hm) const
	{
		if (at == kNoSeed)
			return;
		if (!Measure) {
			// zl_seed3 keeps the branches: chosen at the end as below, its
			// seeds took 0.6-0.8% longer (H100, two rounds side by side).
			uint32_t s = c;
			if (c != kNoSeed && (__funnelshift_r(x0, x1, r) != lo || (__funnelshift_r(x1, x2, r) & hm) != hi))
				s = kNoSeed;
			out[at] = s;
			return;
		}
		if (c == kNoSeed) {
			out[at] = kNoSeed;
			return;
		}
		const uint32_t d0 = __funnelshift_r(x0, x1, r) ^ lo, d1 = __funnelshift_r(x1, x2, r) ^ hi;
		const bool agree = (d0 == 0) & ((d1 & hm) == 0);
		// The first byte that differs among bytes 4 to 11, or 12: from
		// each word's trailing zeros (32 for none), where __ffsll's 64-bit
		// form took twice the instructions.
		const uint32_t d2 = __funnelshift_r(x2, x3, r) ^ m2;
		const uint32_t z1 = (uint32_t)__clz(__brev(d1)), z2 = (uint32_t)__clz(__brev(d2));
		const uint32_t l = 4 + (z1 < 32 ? z1 : 32 + z2) / 8;
		uint32_t s = c | (l < cap ? l : cap) << kSeedLenShift;
		if (Back) {
			// The bytes before agree from the top of the word down.
			const uint32_t db = __funnelshift_r(xb, x0, r) ^ pb;
			const uint32_t b = (uint32_t)__clz(db) / 8; // 4 when db is 0
			s |= (b < bcap ? b : bcap) << kSeedBackShift;
		}
		out[at] = agree ? s : kNoSeed;
	}
};

// ChunkPart is one of parts parts of the chunk table (zl_cseed), one a
// CTA in shared memory: the hashes h with h*parts >> bits == part, which
// are those from first(part) up to first(part + 1), at index h -
// first(part). Every CTA of a chunk hashes all of the chunk's positions and
// looks up and inserts those of its part. (A table of 2^bits entries
// needs h*parts below 2^32: bits ≤ 27 for 16 parts.)
struct ChunkPart {
	uint32_t bits, part, parts, lo, size;
	__device__ __forceinline__ uint32_t first(uint32_t p) const
	{
		return (uint32_t)((((uint64_t)p << bits) + parts - 1) / parts);
	}
	__device__ __forceinline__ ChunkPart(uint32_t b, uint32_t p, uint32_t n) : bits(b), part(p), parts(n)
	{
		lo = first(p);
		size = first(p + 1) - lo;
	}
	__device__ __forceinline__ bool holds(uint32_t h) const { return (h * parts) >> bits == part; }
};

// chunk_word is bytes j..j+3 of the n bytes at p, little-endian, those
// from n on read as 0 and never loaded.
__device__ __forceinline__ uint32_t chunk_word(const uint8_t *__restrict__ p, uint32_t j, uint32_t n)
{
	if (j + 4 <= n)
		return gword(p + j);
	uint32_t w = 0;
	for (uint32_t b = 0; j + b < n; b++)
		w |= (uint32_t)p[j + b] << (8 * b);
	return w;
}

// kCSeedRun is the consecutive positions a thread of zl_cseed takes at a
// time: their keys come from kCSeedRun / 4 + 2 words, and their loads are
// in flight together.
constexpr uint32_t kCSeedRun = 8;

// ChunkKeys is kCSeedRun consecutive positions' keys from i on: lo their
// bytes 0-3, hi the rest masked by hm; bytes past n read as 0, never
// loaded (the last block of the last chunk ends the allocation).
struct ChunkKeys {
	uint32_t lo[kCSeedRun], hi[kCSeedRun];
	__device__ __forceinline__ ChunkKeys(const uint8_t *__restrict__ p, uint32_t i, uint32_t n, uint32_t hm)
	{
		uint32_t w[kCSeedRun / 4 + 2];
		static_assert(kCSeedRun == 8, "ChunkKeys: a run's words are two 8-byte loads");
		if ((((uintptr_t)p + i) & 7) == 0 && i + 16 <= n) {
			// The run's 16 bytes in two loads, where four words each
			// checked against the block's end took 15 instructions:
			// zl_cseed is bound by its instructions, and took 0.4-0.55
			// ms a GiB less, the kernels at level 3 0.6-1.1% faster
			// (H100, two rounds side by side, 2026-11-26).
			const uint2 a = __ldg(reinterpret_cast<const uint2 *>(p + i));
			const uint2 b = __ldg(reinterpret_cast<const uint2 *>(p + i + 8));
			w[0] = a.x;
			w[1] = a.y;
			w[2] = b.x;
			w[3] = b.y;
		} else {
#pragma unroll
			for (uint32_t k = 0; k < kCSeedRun / 4 + 2; k++)
				w[k] = chunk_word(p, i + 4 * k, n);
		}
#pragma unroll
		for (uint32_t r = 0; r < kCSeedRun; r++) {
			lo[r] = __funnelshift_r(w[r / 4], w[r / 4 + 1], 8 * (r % 4));
			hi[r] = __funnelshift_r(w[r / 4 + 1], w[r / 4 + 2], 8 * (r % 4)) & hm;
		}
	}
};

// chunk_seed_block is zl_cseed's look-up for the block of n bytes at
// cs + off: every position eligible in its segment whose seed is empty
// and whose hash lies in the CTA's part (cp) takes the part's entry (tab)
// when the entry's tag is the position's. The key bytes are not
// compared here: the parse measures the match of every seed it is
// handed, and one whose key bytes differ (a chance of one in 2^tb among
// those whose hash agrees) comes out shorter than the key, so the parse
// turns it down as the reference, which never hands it over, finds no
// seed. Comparing here would load each entry's bytes twice.
__device__ void chunk_seed_block(const uint8_t *__restrict__ cs, uint32_t off, uint32_t n,
                                 uint32_t *__restrict__ out, uint32_t key, uint32_t hm, uint32_t bits, uint32_t tb,
                                 const ChunkPart &cp, const uint32_t *tab)
{
	for (uint32_t i0 = kCSeedRun * threadIdx.x; i0 + key <= n; i0 += kCSeedRun * kCSeedThreads) {
		// The run's seeds go out with its key bytes, so that the two
		// loads' round trips overlap, where the seeds of the positions
		// in the part were loaded once their hashes were known (Nsight
		// Compute: 10% of zl_cseed's stall samples waited on them).
		// Those past the block's end are loaded too (allocLit pads the
		// buffer) and never used. Level 3's seeds 0.6 to 1.2 ms a GiB
		// shorter (H100, two rounds side by side). Loading the next
		// run's key bytes ahead as well was slower.
		uint32_t sd[kCSeedRun];
		const uint32_t *o = out + off + i0;
		if (((uintptr_t)o & 15) == 0) {
			const uint4 a = reinterpret_cast<const uint4 *>(o)[0], b = reinterpret_cast<const uint4 *>(o)[1];
			sd[0] = a.x, sd[1] = a.y, sd[2] = a.z, sd[3] = a.w, sd[4] = b.x, sd[5] = b.y, sd[6] = b.z, sd[7] = b.w;
		} else {
#pragma unroll
			for (uint32_t r = 0; r < kCSeedRun; r++)
				sd[r] = o[r];
		}
		static_assert(kCSeedRun == 8, "chunk_seed_block: a run's seeds are two 16-byte loads");
		const ChunkKeys k(cs + off, i0, n, hm);
		uint32_t h[kCSeedRun], tag[kCSeedRun], c[kCSeedRun];
		bool want[kCSeedRun];
#pragma unroll
		for (uint32_t r = 0; r < kCSeedRun; r++) {
			const uint32_t i = i0 + r;
			const uint32_t seg_end = (i / kSeg + 1) * kSeg < n ? (i / kSeg + 1) * kSeg : n;
			h[r] = tagged_hash(k.lo[r], k.hi[r], bits, tb, tag[r]);
			want[r] = (i + key <= seg_end) & cp.holds(h[r]) & (sd[r] == kNoSeed);
		}
#pragma unroll
		for (uint32_t r = 0; r < kCSeedRun; r++)
			c[r] = want[r] ? tab[h[r] - cp.lo] : 0;
#pragma unroll
		for (uint32_t r = 0; r < kCSeedRun; r++)
			if (c[r] != 0 && (c[r] & ((1u << tb) - 1)) == tag[r])
				out[off + i0 + r] = (c[r] >> tb) - 1 - off;
	}
}

// chunk_insert_block puts the eligible positions of the block of n bytes
// at cs + off whose hash lies in the CTA's part into its table: the
// position + 1 above tb bits of tag, so that atomicMax keeps the latest.
__device__ __forceinline__ void chunk_insert_block(const uint8_t *__restrict__ cs, uint32_t off, uint32_t n,
                                                   uint32_t key, uint32_t hm, uint32_t bits, uint32_t tb,
                                                   const ChunkPart &cp, uint32_t *tab)
{
	for (uint32_t i0 = kCSeedRun * threadIdx.x; i0 + key <= n; i0 += kCSeedRun * kCSeedThreads) {
		const ChunkKeys k(cs + off, i0, n, hm);
#pragma unroll
		for (uint32_t r = 0; r < kCSeedRun; r++) {
			uint32_t tag;
			const uint32_t h = tagged_hash(k.lo[r], k.hi[r], bits, tb, tag);
			if (i0 + r + key <= n && cp.holds(h))
				atomicMax(&tab[h - cp.lo], (off + i0 + r + 1) << tb | tag);
		}
	}
}

// zl_own3 (the strong rung): every position's candidate in its own
// segment, worked out apart from the parse. The reference puts every
// position it passes in the segment's table, inside matches too, so the
// table's entry at i is the latest position before i in the segment with
// i's hash, whatever the parse chose: it depends on the segment's bytes
// only. Where that candidate's match reaches the shortest match, the
// parse takes it without asking the seed, so zl_own3 writes it over the
// position's seed (after zl_seed3 and zl_cseed): its block-relative
// position, kOwnFlag, and its length measured over its first
// kOwnMeasured bytes. The parse then keeps no table of its own, and its
// shared memory is the segments' bytes alone: thirteen warps an SM where
// the table's 36 KiB a warp left four. Side by side with the parse that
// kept it (H100, two rounds, the same bytes), zl_parse3 took 20.8 -> 13.3
// ms a GiB on dim frames, 20.9 -> 14.9 on bright cells, 18.7 -> 15.3 on
// flat fields, 23.0 -> 14.5 on 8-bit frames and 25.9 -> 12.8 on saturated
// ones, for 3.6 to 4.5 ms of zl_own3: level 3's kernels 4 to 20% faster,
// flat fields 0.3% slower.
static_assert(kStrongKey == 5, "own_segment: a key of a word and one byte");

// OwnShared is a zl_own3 warp's segment (its words, zero past its end,
// with room for the reads past it) and its table of latest positions.
struct alignas(16) OwnShared {
	alignas(16) uint32_t seg[kOwnWarps][kSegWords + 8];
	uint16_t tab[kOwnWarps][1u << kStrongHashBits];
	// A round's lanes by hash, each a bit (__match_any_sync's answer),
	// cleared again as soon as read: all zero between rounds.
	uint32_t lanes[kOwnWarps][1u << kStrongHashBits];
};

// own_segment writes the own candidates of the segment of len bytes a
// bytes into the block at blk whose match is at least mm bytes into out
// (the block's seeds), the warp taking 32 positions a round: a round's
// candidates are the latest of its own lanes with the same hash, else the
// table's, which holds the rounds before. The lanes of a hash are found
// by each ORing its bit into lanes[h]; __match_any_sync, which answers
// the same, took zl_own3 9 ms a GiB against 5.5 (H100, level 3, bright
// cells, with eight warps a CTA against four), and branches on whether a
// lane's position has a whole key made nvcc hash it three times.
__device__ __forceinline__ void own_segment(const uint8_t *__restrict__ blk, uint32_t a, uint32_t len,
                                            uint32_t *__restrict__ out, uint32_t mm, uint32_t *sw, uint16_t *tab,
                                            uint32_t *lanes, unsigned lane)
{
	const uint8_t *p = blk + a;
	if (len == kSeg && ((uintptr_t)p & 15) == 0) {
		reinterpret_cast<uint4 *>(sw)[lane] = __ldg(reinterpret_cast<const uint4 *>(p) + lane);
		if (lane < 8)
			sw[kSegWords + lane] = 0;
	} else {
		for (uint32_t j = lane; j < kSegWords + 8; j += 32)
			sw[j] = chunk_word(p, 4 * j, len);
	}
	for (uint32_t j = lane; j < (1u << kStrongHashBits) / 2; j += 32)
		reinterpret_cast<uint32_t *>(tab)[j] = 0xFFFFFFFFu;
	__syncwarp();
	const auto word = [&](uint32_t pos) -> uint32_t {
		return __funnelshift_r(sw[pos >> 2], sw[(pos >> 2) + 1], (pos & 3) * 8);
	};
	for (uint32_t base = 0; base + kStrongKey <= len; base += 32) {
		const uint32_t i = base + lane;
		const bool elig = i + kStrongKey <= len;
		const uint32_t q = elig ? i : 0, r = (q & 3) * 8;
		const uint32_t w0 = sw[q >> 2], w1 = sw[(q >> 2) + 1], w2 = sw[(q >> 2) + 2];
		const uint32_t lo = __funnelshift_r(w0, w1, r), hi8 = __funnelshift_r(w1, w2, r);
		const uint32_t h = seed_hash(lo, hi8 & 0xFFu, kStrongHashBits);
		// Without branches: a lane past the key's reach adds no bit,
		// and its clearing of position 0's entry comes after every read.
		atomicOr(&lanes[h], (uint32_t)elig << lane);
		__syncwarp();
		const uint32_t m = lanes[h], t = tab[h];
		const uint32_t below = m & ((1u << lane) - 1);
		const uint32_t c = below != 0 ? base + 31 - __clz(below) : t;
		__syncwarp();
		lanes[h] = 0;
		if (elig & ((m >> lane) == 1u))
			tab[h] = (uint16_t)i;
		if (elig && c != 0xFFFFu) {
			const uint32_t rc = (c & 3) * 8;
			const uint32_t v0 = sw[c >> 2], v1 = sw[(c >> 2) + 1], v2 = sw[(c >> 2) + 2];
			const uint32_t x0 = __funnelshift_r(v0, v1, rc) ^ lo, x1 = __funnelshift_r(v1, v2, rc) ^ hi8;
			// The key (five bytes) first; only a candidate that shares it
			// is measured further.
			if (x0 == 0 && (x1 & 0xFFu) == 0) {
				uint32_t l = 4 + (x1 != 0 ? (uint32_t)(__ffs(x1) - 1) / 8 : 4);
				if (l == 8) {
					const uint32_t x2 = word(c + 8) ^ __funnelshift_r(w2, sw[(q >> 2) + 3], r);
					l += x2 != 0 ? (uint32_t)(__ffs(x2) - 1) / 8 : 4;
					if (l == 12) {
						const uint32_t x3 = word(c + 12) ^ word(i + 12);
						l += x3 != 0 ? (uint32_t)(__ffs(x3) - 1) / 8 : 4;
					}
				}
				l = l < len - i ? l : len - i;
				if (l >= mm)
					out[a + i] = (a + c) | l << kSeedLenShift | kOwnFlag;
			}
		}
		__syncwarp();
	}
}

#endif
