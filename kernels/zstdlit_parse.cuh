// zstdlit_parse.cuh: the match parse (zstdlit's match.go): the encoding's
// shared constants, the seeds' format and the per-segment parse. Included
// by zstdlit.cuh inside namespace zl, before zstdlit_seed.cuh (how the
// seeds are found) and zstdlit_seq.cuh, which reads what the parse writes.
//
// zl_parse gives every 512-byte segment of a block its own thread, as the
// reference parses every segment on its own; each thread writes its
// sequences, packed, to its segment's slot and a summary word (segMeta;
// zstdlit_slot.cuh).
// zl_seed (and, from level 3, zl_cseed) hands each position its seed
// candidate beforehand, from the bytes before its segment.

#ifndef ZSPOOL_ZSTDLIT_PARSE_CUH
#define ZSPOOL_ZSTDLIT_PARSE_CUH

constexpr uint32_t kSeg = 512;                  // zstdlit.SegmentSize
constexpr uint32_t kSegsPerBlock = kBlock / kSeg; // 256
// The segment table's bits: kFastHashBits below level 3, kStrongHashBits
// from it (zstdlit's fastLocalBits, strongLocalBits).
constexpr int kFastHashBits = 7;
constexpr int kStrongHashBits = 10;
constexpr int kGridHashBits = 6; // the fast rung's on the grid (zstdlit's gridLocalBits)
constexpr uint32_t kMinMatch = 5;                  // zstdlit.minMatchFloor: the shortest match of any rung
// The rungs' key lengths and seed table bits (zstdlit's fastKeyBytes,
// fastSeedBits, strongKeyBytes, strongSeedBits): zl_seed is the fast
// rung's and zl_seed3 the strong rung's, and each takes them as
// constants. The parse takes its key from the host: as a constant too it
// measured 0.5-1.5% slower at level 1 and 10-15% at level 3, where nvcc
// then scheduled zl_parse3 into 96 registers instead of 127 (H100,
// 2026-11-26).
constexpr uint32_t kFastKey = 6;
constexpr uint32_t kFastSeedBits = 14;
constexpr uint32_t kStrongKey = 5;
constexpr uint32_t kStrongSeedBits = 15;
constexpr uint32_t kSlotSeqs = kSeg / kMinMatch; // 102: the most a segment holds (zstdlit.MaxSegmentSeqs)
// kSlotStride is a slot's room in the buffers, kSlotSeqs rounded up to
// whole 16-byte groups, so that the parse stores its sequences four at a
// time (SegmentSeqs).
constexpr uint32_t kSlotStride = 104;
static_assert(kSlotStride % 4 == 0 && kSlotStride >= kSlotSeqs && kSlotStride < kSlotSeqs + 4,
              "kSlotStride: kSlotSeqs rounded up to a multiple of four");
// kNoPos is an empty entry of a segment's table: 9 bits of ones, never a
// position (an eligible one has a whole key before the segment's end).
constexpr uint16_t kNoPos = 0x1FF;
static_assert(kSeg - kMinMatch < kNoPos, "a segment's positions must fit 9 bits below kNoPos");
constexpr uint32_t kParseThreads = 32;                        // segments per zl_parse CTA (a warp)
constexpr uint32_t kParseCTAs = kSegsPerBlock / kParseThreads; // zl_parse CTAs per block
constexpr uint32_t kBatch = 8;                                // positions a lane looks up at once (fast rung)
// kGridBatch is the batch on the grid where the key decides (16-bit
// data; kGridStrictBatch is the 8-bit sets'). A batch of 8 spans 16
// bytes: on dim frames, whose matches come every few bytes, a match early
// in it wastes the rest of its look-ups. Against 8 (H100, two rounds,
// level 1): dim frames 41.4 -> 44.4 GB/s, bright cells 47.3 -> 47.9,
// flat fields, which find few matches, 66.4 -> 64.4; 6 took 43.2, 48.0
// and 65.6, and 2 took 45.0, 44.0 and 60.4. The slowest set gains most,
// and the three together take 2.4% less time.
constexpr uint32_t kGridBatch = 4;
// kStrongBatch is the strong rung's: against 8 (H100, two rounds, level
// 3), zl_parse3 took 29.1, 28.7, 25.3 and 31.7 ms a GiB on dim, bright,
// flat and 8-bit frames instead of 31.1, 30.0, 28.5 and 33.6, the kernels
// 2 to 5% faster. At the fast rung four was slower (8-bit frames 38.4 ->
// 38.1 GB/s).
constexpr uint32_t kStrongBatch = 4;
// kGridStrictBatch is the grid's batch where the shortest match is longer
// than the key (8-bit frames: 8 bytes against 6), where the Strict parse
// turns most candidates down unlooked-at and a longer batch wastes few
// look-ups. Against 4 (H200, one call, the same bytes): the parse 5.22 ->
// 4.39 ms a GiB on 8-bit frames and 3.85 -> 3.42 on saturated ones, the
// kernels 67.5 -> 71.3 and 83.4 -> 85.6 GB/s at level 1. The 16-bit sets
// keep 4: at 8 their parse took 5.43 -> 6.94 (dim frames) and 4.68 ->
// 5.37 (bright cells), at 2 5.08 and 6.28.
constexpr uint32_t kGridStrictBatch = 8;
// batch_of is the parse's batch at the rung of HB on grid G (Strict: the
// shortest match longer than the key, parse_segment's).
template <int HB, uint32_t G, bool Strict = false> __host__ __device__ constexpr uint32_t batch_of()
{
	return G == 2 ? (Strict ? kGridStrictBatch : kGridBatch) : HB == kStrongHashBits ? kStrongBatch : kBatch;
}

// A packed sequence: the literal length within its segment (10 bits), the
// match length (11) and the Offset_Value (11).
__device__ __forceinline__ uint32_t pack_seq(uint32_t ll, uint32_t ml, uint32_t ov) { return ll | ml << 10 | ov << 21; }
__device__ __forceinline__ uint32_t seq_ll(uint32_t q) { return q & 0x3FF; }
__device__ __forceinline__ uint32_t seq_ml(uint32_t q) { return (q >> 10) & 0x7FF; }
__device__ __forceinline__ uint32_t seq_ov(uint32_t q) { return q >> 21; }
// A packed Offset_Value of kOvEscape means the value is in the segment's
// side slot: the parse's offsets reach across the block.
constexpr uint32_t kOvEscape = 0x7FF;

// segMeta: the segment's sequences (8 bits), literals (11), and literals
// after its last match, or all of them (11).
__device__ __forceinline__ uint32_t meta_nseq(uint32_t m) { return m & 0xFF; }
__device__ __forceinline__ uint32_t meta_nlit(uint32_t m) { return (m >> 8) & 0x7FF; }
__device__ __forceinline__ uint32_t meta_trail(uint32_t m) { return (m >> 19) & 0x7FF; }

// The parse (zstdlit/match.go): the segment's own table of HB bits, and
// the block's seed, built apart by zl_seed (and, from level 3, zl_cseed
// from the chunk's earlier blocks) into a candidate a byte (block-relative,
// as a two's-complement int32 when it lies in an earlier block; kNoSeed
// for none, never a position: an earlier block's last eligible one is
// key bytes before its end). The level's rung sets the key (6
// bytes, or 5 from level 3) and the seed's bits (14, or 15), which the
// host passes to both kernels and sizes zl_seed's shared memory by.
constexpr uint32_t kNoSeed = 0xFFFFFFFFu;
// At the fast rung a seed of zl_seed's (in the block, so not negative)
// carries above its position the length of its match in the first
// kSeedMeasured bytes, capped at the segment's end: zl_seed has those
// bytes at hand when it checks the candidate's key, and the parse, which
// waited on loading them, measures further only when all of them agree.
// At the strong rung, where zl_seed has one thread block an SM and the
// parse then loaded its seeds ahead (through 775861c), that cost more
// than it saved.
//
// Twelve bytes, not eight: on dim and 8-bit frames, whose matches are
// long, the parse waited most on the loads that measured past the eighth
// byte (Nsight Compute's stall samples of zl_parse2 on dim frames). The
// parse took 10.07 -> 8.98 ms a GiB on dim frames and 9.61 -> 7.98 on
// 8-bit ones, the seeds 4.03 -> 4.48 and 4.12 -> 4.43; the kernels 44.4
// -> 45.6 and 47.3 -> 50.3 GB/s, bright cells 47.9 -> 48.2, flat fields
// and saturated 8-bit frames the same (H100, two rounds side by side).
// Sixteen bytes saved the parse no more and cost the seeds 0.3 ms more.
constexpr uint32_t kSeedLenShift = 24;
constexpr uint32_t kSeedPosMask = (1u << kSeedLenShift) - 1;
constexpr uint32_t kSeedMeasured = 12;
constexpr uint32_t kSeedLenMask = 15; // kSeedMeasured fits 4 bits
static_assert(kBlock <= kSeedPosMask, "a seed's position must fit below its length");
static_assert(kSeedMeasured <= kSeedLenMask, "a seed's measured length must fit its field");
// On the grid a seed also carries, above its length, how many of the
// bytes before it agree with those before its position: at most
// kSeedBack, and no more than lie before the position in its segment or
// before the candidate in the block, so a count below kSeedBack is exact
// and kSeedBack means "that many, perhaps more". The parse extends a seed's
// match backwards over them without loading them: that one-byte load of
// global memory, the first the parse made of the candidate's bytes (whose
// first ones zl_seed measured), was where zl_parse2 waited most, 24% of
// its stall samples on bright cells and 12% on dim frames (Nsight Compute,
// H100).
constexpr uint32_t kSeedBackShift = 28;
constexpr uint32_t kSeedBack = 4;
static_assert(kSeedBack < 8 && (kSeedBack << kSeedBackShift) < (1u << 31),
              "a seed's back count must fit below bit 31, which marks an earlier block's seed");
// seed_known is the measured length a fast-rung seed of grid G carries
// (on the grid its back count lies above it).
template <uint32_t G> __device__ __forceinline__ uint32_t seed_known(uint32_t sd)
{
	return G > 1 ? sd >> kSeedLenShift & kSeedLenMask : sd >> kSeedLenShift;
}
// At the strong rung a seed word may hold instead the position's
// candidate in its own segment (zl_own3, own_segment), laid out as the
// fast rung's measured seeds are: its block-relative position below
// kSeedLenShift, its match's length in its first kOwnMeasured bytes
// (capped at the segment's end, and at least the shortest match) above
// it, and kOwnFlag. The parse takes it as it stands.
constexpr uint32_t kOwnFlag = 1u << 30;
constexpr uint32_t kOwnMeasured = 16;
constexpr uint32_t kOwnLenMask = 31;
static_assert(kOwnMeasured <= kOwnLenMask && kOwnFlag > (kOwnLenMask << kSeedLenShift),
              "an own candidate's word: its position, then its length, then the flag, below bit 31");
constexpr uint32_t kSeedThreads = kSeg;  // zl_seed's CTA: a position of a segment each
constexpr uint32_t kCSeedThreads = 1024; // zl_cseed's CTA
constexpr uint32_t kOwnWarps = 4;        // zl_own3's CTA: a warp a segment
// kSeedTagBits is the hash bits zl_seed keeps below a position + 1 (at
// most kBlock, 18 bits).
constexpr uint32_t kSeedTagBits = 14;
static_assert(((uint64_t)kBlock << kSeedTagBits) <= 0xFFFFFFFFu, "zl_seed: a tagged entry must fit 32 bits");

// key_hi is the mask of a key's bytes from the fifth on, in the word
// that starts there: two bytes of a 6-byte key, one of a 5-byte key.
__device__ __forceinline__ uint32_t key_hi(uint32_t key) { return key == 6 ? 0xFFFFu : 0xFFu; }

// seed_hash is zstdlit's seedHash of the key lo (bytes 0-3) and hi (the
// rest, masked by key_hi).
__device__ __forceinline__ uint32_t seed_hash(uint32_t lo, uint32_t hi, int bits)
{
	const uint64_t key = (uint64_t)lo | (uint64_t)hi << 32;
	return (uint32_t)(((key << 16) * 0xCF1BBCDCB7A56463ull) >> (64 - bits));
}

// gword is the 4 bytes at p, little-endian, from two aligned loads. The
// caller keeps p+3 inside the data; the aligned words around it are inside
// the allocation.
__device__ __forceinline__ uint32_t gword(const uint8_t *p)
{
	const uintptr_t a = (uintptr_t)p & ~(uintptr_t)3;
	const uint32_t r = (uint32_t)((uintptr_t)p & 3) * 8;
	const uint32_t w0 = __ldg(reinterpret_cast<const uint32_t *>(a));
	if (r == 0)
		return w0;
	return __funnelshift_r(w0, __ldg(reinterpret_cast<const uint32_t *>(a) + 1), r);
}

// seed_index is the index in zl_seed's output of the seed of position pos
// (a multiple of G) of chunk chunk: a chunk has a seed a grid position,
// ceil(chunk_bytes / G), so that an odd chunk size keeps the chunks'
// seeds apart on the grid (whose odd positions share their even
// neighbour's index).
template <uint32_t G> __device__ __forceinline__ uint64_t seed_index(uint64_t chunk, uint64_t chunk_bytes, uint64_t pos)
{
	return chunk * ((chunk_bytes + G - 1) / G) + pos / G;
}

// segs_per_chunk is the number of segment slots a chunk has.
__device__ __forceinline__ uint64_t segs_per_chunk(uint64_t chunk_bytes)
{
	return chunk_bytes == 0 ? 1 : (chunk_bytes + kSeg - 1) / kSeg;
}

#include "zstdlit_repcode.cuh"
#include "zstdlit_segment.cuh"
#include "zstdlit_slot.cuh"
#include "zstdlit_batch.cuh"

// parse_segment is zstdlit's parseSegment for the lane's segment of n
// bytes in S, which starts a bytes into the block at blk: the segment's
// own candidate first, then, when its match falls short, the seed's (seed
// holds zl_seed's candidates for the segment's positions, each already
// known to share its key bytes). It writes the packed sequences to slot,
// Offset_Values of kOvEscape and more to side, and returns the segment's
// summary word. (A segment's first sequence knows no repeat offsets, so
// whether its literal length counts the carry does not change its code.)
//
// The reference inserts every position it passes, inside matches too, so
// when the parse stands at i the table holds exactly the positions before
// i: a position's candidate does not depend on the parse. That lets the
// lane look up a batch of positions' candidates at once and test them in
// order, which turns the batch's dependent chains of shared-memory loads
// into one; one lane per segment leaves little else to hide their latency
// behind. The
// batch's seeds are loaded from global memory together.
//
// On the grid (G 2) the batch is kGridBatch grid positions, from the
// grid's phase (SegView::phase: on 16-bit data the pixels' high bytes), and a match
// is extended backwards as zstdlit's extendBack does: over the segment's
// own bytes for a candidate in the segment, over the block's (global
// memory) for a seed.
template <int HB, uint32_t G, bool Strict>
__device__ uint32_t parse_segment(const SegView<HB> &V, uint32_t n, uint32_t *__restrict__ slot,
                                         uint32_t *__restrict__ side, uint32_t min_match, const uint8_t *__restrict__ blk,
                                         uint32_t a, const uint32_t *__restrict__ seed, uint32_t key)
{
	static_assert(HB != kStrongHashBits, "parse_segment: the strong rung parses with parse_segment_own");
	constexpr uint32_t B = batch_of<HB, G, Strict>();
	V.S.tab.clear(V.lane); // every entry kNoPos
	const uint32_t mm = min_match > key ? min_match : key, hm = key_hi(key);
	// Strict (mm longer than the key, as on 8-bit frames: 8 against 6):
	// a candidate is looked at only if its match may reach mm, an own
	// candidate's bytes 4 to mm - 1 agreeing (mmask, over the second
	// word) and a seed's measured length reaching mm or all that was
	// measured. One that falls short comes out shorter than mm, and the
	// parse would turn it down. Without it, a batch on 8-bit frames
	// looked at most of its candidates in turn, each look on 13 of the
	// warp's lanes (Nsight Compute, H200). Side by side (H200, two
	// rounds, the same bytes): the parse 6.65 -> 5.17 ms a GiB on 8-bit
	// frames, 3.65 -> 3.82 on saturated ones, where few candidates fall
	// short; the own test alone took 6.11 and 3.62. Where mm is the key,
	// the key's bytes already decide, and the 16-bit sets keep the parse
	// as it was (within 0.3%).
	static_assert(kFastKey >= 5 && kSeedMeasured >= 8, "parse_segment: mmask covers bytes 4 to 7");
	const uint32_t mmask = !Strict ? hm : mm >= 8 ? 0xFFFFFFFFu : (1u << (8 * (mm - 4))) - 1;
	const uint32_t sneed = mm < kSeedMeasured ? mm : kSeedMeasured;
	SegmentSeqs out;
	uint32_t i = V.phase; // the grid's first position (0 off the grid)
	// Through 775861c the strong rung loaded the next batch's seeds a batch
	// ahead (57b850e: with batches of eight, the parse waited on those
	// loads more than on anything else). With batches of four the loads
	// ahead cost more than they hid: level 3's parse 26.1 against 29.2 ms
	// a GiB on dim frames without them, 22.9 against 25.3 on flat fields
	// (H100, 2026-11-26). What pays is loading them as soon as the next
	// batch's start is known, before this batch's match is entered and
	// written (below): no load is wasted, and that work hides them. Side
	// by side on an H100 (two rounds, the same bytes), level 3's parse 26.1
	// -> 23.7 ms a GiB on dim frames, 25.8 -> 23.5 on bright cells, 22.9 ->
	// 20.6 on flat fields, the kernels 3.6 to 4.3% faster (1.8% on
	// saturated 8-bit frames); at level 1, ten warps an SM, dim frames and
	// bright cells 0.7 and 1.0% faster, flat fields and 8-bit frames 0.4
	// and 0.5% slower.
	uint32_t sc[B];
	load_seeds<G, B>(seed, i, n, key, sc);
	// The positions inside the last match still to go into the table,
	// from ins to ins_to, a batch a turn of the loop: hashed by the same
	// instructions as the other lanes' look-ups, where a loop of their
	// own had run on the lanes that had found a match alone (Nsight
	// Compute, dim frames: its hashing on 7 to 11 lanes of 32). The
	// match's first batch goes in at once, so that a short match costs
	// no turn. Side by side (H200, level 1, one call, the same bytes),
	// the parse took 5.52 -> 5.42 ms a GiB on dim frames, 4.72 -> 4.47
	// on bright cells, 3.68 -> 3.47 flat fields, 4.39 -> 4.09 8-bit
	// frames and 3.42 -> 3.12 saturated ones. With every batch a turn,
	// the first too, bright cells' short matches each cost one: their
	// parse 4.80 against this form's 4.47 (another call).
	uint32_t ins = 0, ins_to = 0;
	while (i + key <= n) {
		const bool inserting = ins < ins_to;
		const uint32_t j0 = inserting ? ins : i;
		uint32_t x[B], y[B], h[B];
		batch_hashes<HB, G, B>(V, j0, hm, x, y, h);
		if (inserting) {
			set_batch<HB, G, B>(V, h, j0, ins_to);
			ins = j0 + G * B;
			continue;
		}
		// the batch's eligible positions: i + G*k + key <= n
		const uint32_t elig = (n - key - i) / G + 1;
		const uint32_t cnt = elig < B ? elig : B;
		uint32_t c[B], w[B], v[B]; // the own candidates and their first words
		const uint32_t look = batch_look<HB, G, B, Strict>(V, i, cnt, h, x, y, sc, mmask, sneed, c, w, v);
		const BatchMatch m = batch_match<HB, G, B>(V, look, i, c, sc, w, x, v, y, n, mm, mmask, blk, a);
		const uint32_t at = m.at, l = m.l, off = m.off;
		// Only the positions before the match's end go in now: a short
		// match early in the batch ends before it does, and the parse
		// looks the rest up again from there.
		const uint32_t reach = at + (l + G - 1) / G; // the batch's positions before the match's end
		const uint32_t stop = l == 0 ? cnt : reach < cnt ? reach : cnt;
#pragma unroll
		for (uint32_t k = 0; k < B; k++)
			if (k < stop)
				V.set(h[k], i + G * k);
		if (l == 0) {
			i += G * cnt;
			load_seeds<G, B>(seed, i, n, key, sc);
			continue;
		}
		const uint32_t p = i + G * at, end = p + l;
		// The next batch's seeds go out now, its start known, so that
		// the work on this match hides their loads.
		const uint32_t inext = V.phase + (end - V.phase + G - 1) / G * G;
		load_seeds<G, B>(seed, inext, n, key, sc);
		// The rest of the match goes in, as the reference inserts it,
		// before the next look-up: its first batch now, the others in
		// the turns of the loop from here.
		const uint32_t last = n - (key - 1); // positions below it have a whole key
		ins = i + G * cnt;
		ins_to = end < last ? end : last;
		if (ins < ins_to) {
			uint32_t x2[B], y2[B], h2[B];
			batch_hashes<HB, G, B>(V, ins, hm, x2, y2, h2);
			set_batch<HB, G, B>(V, h2, ins, ins_to);
			ins += G * B;
		}
		const uint32_t start = G > 1 ? match_start(V, m, p, out.litStart, blk, a) : p;
		out.emit(slot, side, start, end, off);
		i = inext;
	}
	return out.finish(slot, side, n);
}

// parse_segment_own is parse_segment at the strong rung, every position,
// where zl_own3 has put each position's own candidate over its seed when
// the reference would take it: the parse keeps no table, and a batch's
// look-ups are its seed words alone.
__device__ uint32_t parse_segment_own(const SegView<kStrongHashBits> &V, uint32_t n, uint32_t *__restrict__ slot,
                                      uint32_t *__restrict__ side, uint32_t min_match,
                                      const uint8_t *__restrict__ blk, uint32_t a, const uint32_t *__restrict__ seed,
                                      uint32_t key)
{
	constexpr uint32_t B = kStrongBatch;
	const uint32_t mm = min_match > key ? min_match : key;
	SegmentSeqs out;
	uint32_t i = 0;
	uint32_t sc[B];
	load_seeds<1, B>(seed, 0, n, key, sc);
	while (i + key <= n) {
		const uint32_t elig = n - key - i + 1;
		const uint32_t cnt = elig < B ? elig : B;
		uint32_t look = 0;
#pragma unroll
		for (uint32_t k = 0; k < B; k++)
			look |= (uint32_t)((k < cnt) & (sc[k] != kNoSeed)) << k;
		uint32_t at = 0, l = 0, off = 0;
		while (look != 0) {
			at = (uint32_t)(__ffs(look) - 1);
			look &= look - 1;
			uint32_t sd = sc[0];
#pragma unroll
			for (uint32_t k = 1; k < B; k++)
				if (at == k)
					sd = sc[k];
			const uint32_t p = i + at;
			if ((int32_t)sd >= 0 && (sd & kOwnFlag) != 0) {
				const uint32_t c = (sd & kSeedPosMask) - a;
				const uint32_t got = sd >> kSeedLenShift & kOwnLenMask;
				l = got < kOwnMeasured ? got : kOwnMeasured + V.match_len(c + kOwnMeasured, p + kOwnMeasured, n);
				off = p - c;
				break;
			}
			const uint32_t ls = seed_match_len(V, blk, sd, p, n, 0);
			if (ls >= mm) {
				l = ls;
				off = a + p - sd;
				break;
			}
			l = 0;
		}
		if (l == 0) {
			i += cnt;
			load_seeds<1, B>(seed, i, n, key, sc);
			continue;
		}
		const uint32_t p = i + at, end = p + l;
		load_seeds<1, B>(seed, end, n, key, sc);
		out.emit(slot, side, p, end, off);
		i = end;
	}
	return out.finish(slot, side, n);
}

// block_skipped says whether the match stages (the seeds, the parse, the
// sequences) pass over a block of n bytes of chunk chunk: its chunk is not
// to be encoded (nonfill), or it is too short for Huffman literals, so
// zl_plan stores it Raw or RLE.
__device__ __forceinline__ bool block_skipped(const uint32_t *nonfill, uint64_t chunk, uint32_t n)
{
	return chunk_absent(nonfill, chunk) || n < kMinHuff;
}

// block_first_seg is the slot of the first segment of block bi, of chunk
// chunk: a chunk's blocks have kSegsPerBlock slots each, its last fewer.
__device__ __forceinline__ uint64_t block_first_seg(uint64_t chunk_bytes, uint32_t bpc, uint64_t chunk, uint64_t bi)
{
	return chunk * segs_per_chunk(chunk_bytes) + (uint64_t)(bi % bpc) * kSegsPerBlock;
}

// block_segs is the number of segments of a block of n bytes, its last
// perhaps short.
__device__ __forceinline__ uint32_t block_segs(uint32_t n) { return (n + kSeg - 1) / kSeg; }

// parse_part parses part h (of kParseCTAs) of block bi: one segment per
// lane.
// seed is zl_seed's output; side takes the escaped Offset_Values.
template <int HB, uint32_t G>
__device__ void parse_part(const uint8_t *__restrict__ src, uint64_t chunk_bytes, uint32_t bpc,
                              const uint32_t *__restrict__ nonfill, uint32_t *__restrict__ seqBuf,
                              uint32_t *__restrict__ segMeta, uint64_t bi, uint32_t h, uint32_t min_match,
                              uint32_t key, uint32_t phase, const uint32_t *__restrict__ seed,
                              uint32_t *__restrict__ side, ParseShared<HB> &S)
{
	uint64_t chunk, off;
	uint32_t n;
	block_geometry(chunk_bytes, bpc, bi, chunk, off, n);
	if (block_skipped(nonfill, chunk, n))
		return;
	const unsigned lane = threadIdx.x;
	const uint32_t t = h * kParseThreads + lane;
	const uint32_t a = t * kSeg;
	if (a >= n)
		return;
	const uint64_t g = block_first_seg(chunk_bytes, bpc, chunk, bi) + t;
	const uint32_t len = n - a < kSeg ? n - a : kSeg;
	const uint8_t *blk = src + chunk * chunk_bytes + off;
	load_segment(blk + a, len, S, lane);
	// The lane's view (its grid phase off the grid is 0), slot, side slot
	// and seeds, the same for every rung's parse.
	const SegView<HB> V{S, lane, G > 1 ? phase : 0};
	uint32_t *sl = seqBuf + g * kSlotStride, *sd = side + g * kSlotStride;
	const uint32_t *sp = seed + seed_index<G>(chunk, chunk_bytes, off + a);
	if constexpr (HB == kStrongHashBits)
		segMeta[g] = parse_segment_own(V, len, sl, sd, min_match, blk, a, sp, key);
	else if (min_match > key)
		segMeta[g] = parse_segment<HB, G, true>(V, len, sl, sd, min_match, blk, a, sp, key);
	else
		segMeta[g] = parse_segment<HB, G, false>(V, len, sl, sd, min_match, blk, a, sp, key);
}

#endif
