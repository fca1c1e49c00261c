// zstdlit_seq.cuh: the sequences section (zstdlit's seq.go). Included by
// zstdlit.cuh inside namespace zl, after zstdlit_parse.cuh, whose packed
// sequences and segment summaries it reads, and zstdlit_seqtable.cuh, its
// codes and tables, and before zstdlit_compact.cuh, which packs the
// literals with its SlotRegs.
//
// zl_seq takes one block per warp: the codes' histograms, the three
// tables, and the FSE bitstream (three state chains, a lane each, on the
// block's warp or, for dense blocks, on warp 0 of the CTA with the other
// blocks' chains: seq_rounds; the bits placed by the warp), written into
// the block's free room after where its literals will go. This file holds
// the section's parts, zstdlit_seqrounds.cuh how a CTA's warps go through
// their blocks with them. zl_compact (zstdlit_compact.cuh) packs the
// literals there before zl_plan plans the Huffman code.

#ifndef ZSPOOL_ZSTDLIT_SEQ_CUH
#define ZSPOOL_ZSTDLIT_SEQ_CUH

// A segment's sequences take at most 68 bits each: states 9+8+9, extras
// 8 (literal length within the segment), 8 (match length ≤ 512) and 23
// (offset, up to zstdlit's singleSegmentLimit), 65 in all, and the first
// sequence's literal length, with the carry from before the segment, 8
// more; kSlotSeqs of them and a partial word fit the stage.
constexpr uint32_t kSeqMaxBits = 68;

// zl_seq's CTA in warps, each a block's with shared memory of its own
// (SeqShared). Shared memory is what limits how many warps an SM holds
// while the state chains wait on their loads (an H100 ran zl_seq 13%
// longer on dim frames with 14 warps an SM than with 16), and the GPU
// reserves 1 KiB of it a CTA: three warps pay it once, and seven such
// CTAs (21 warps) fit in an H100's 228 KiB where 16 CTAs of one warp
// did before SeqShared's diet. Two warps a CTA hold 20: zl_seq 1% faster
// than 16 on dim frames, three 5% (side by side, one H100).
constexpr uint32_t kSeqWarps = 3;
constexpr uint32_t kSeqStageWords = (31 + kSlotSeqs * kSeqMaxBits) / 32 + 3;

// SeqCounts is the first pass's: the codes' histograms and the tables'
// scratch, dead once the tables are built.
struct SeqCounts {
	uint32_t hll[kLLSyms], hml[kMLSyms], hof[kOFSyms];
	uint8_t spread[2 * 512 + 256]; // LL, OF (a table of 2^8 at most), ML
	FseWork<kMaxSeqSyms> work[3];
	uint8_t ncount[3][96]; // the tables' descriptions
};

// SeqBatch is the second pass's, a batch of whole segments' sequences at
// a time (seq_fill): their values and codes, each code's step word
// (SeqTable::sym's low half), then each stream's state before each
// sequence, from which the bits it puts out follow.
struct SeqBatch {
	uint32_t ll[kSlotSeqs], ml[kSlotSeqs], ov[kSlotSeqs];
	uint8_t code[3][kSlotSeqs]; // LL, OF, ML, as SeqShared::t
	uint16_t step[3][kSlotSeqs];
	uint16_t sv[3][kSlotSeqs];
	// The bitstream's words from stage0 on, built with atomicOr, the
	// complete ones flushed after each batch.
	uint32_t stage[kSeqStageWords];
};

struct SeqShared {
	SeqTable t[3]; // LL, OF, ML
	// Each segment's summary word (meta_nseq, meta_nlit, meta_trail), and
	// from seq_carries on its sequences and carry (seq_carry): a second
	// array for the carries would cost 1 KiB of the warp's shared memory,
	// which is what limits how many of zl_seq's warps an SM holds.
	uint32_t meta[kSegsPerBlock];
	alignas(4) uint16_t next[kSeqNextLL + kSeqNextOF + kSeqNextML]; // LL, OF, ML (build_seq_ctable)
	// The two passes' scratch share their memory: shared memory is what
	// limits how many of zl_seq's warps an SM holds, and the chains wait
	// on their loads.
	union {
		SeqCounts c;
		SeqBatch g;
	};
	uint32_t fin[3]; // each stream's final state
	uint32_t nseq, nlit, hdr;
	uint32_t batch; // this round's batch's first entry in S.g, kSlotSeqs for none (seq_rounds)
	// The extra-bits tables of the codes that have extra bits, literal
	// length codes from 16 and match length codes from 32 (a code below
	// them is its length, less 3 for a match), each entry the code's
	// baseline with its extra bits' count in the top byte: a warp's lanes
	// index them all differently, which constant memory would serve one
	// address at a time.
	uint32_t llExtra[kLLSyms - kLLPlain], mlExtra[kMLSyms - kMLPlain];
	__device__ void load_tables(unsigned lane)
	{
		for (int i = lane; i < kLLSyms - kLLPlain; i += 32)
			llExtra[i] = kLLBase[kLLPlain + i] | (uint32_t)kLLBits[kLLPlain + i] << 24;
		for (int i = lane; i < kMLSyms - kMLPlain; i += 32)
			mlExtra[i] = kMLBase[kMLPlain + i] | (uint32_t)kMLBits[kMLPlain + i] << 24;
	}
};

// seq_carry is the carry in a summary word seq_carries has rewritten: it
// keeps meta_nseq's byte and puts the carry (at most a block, 2^17) above.
__device__ __forceinline__ uint32_t seq_carry(uint32_t m) { return m >> 8; }

// warp_excl_scan is the exclusive prefix sum of v over the warp, and the
// warp's total in total.
__device__ __forceinline__ uint32_t warp_excl_scan(uint32_t v, unsigned lane, uint32_t &total)
{
	uint32_t x = v;
	for (int d = 1; d < 32; d <<= 1) {
		const uint32_t y = __shfl_up_sync(0xffffffffu, x, d);
		if (lane >= (unsigned)d)
			x += y;
	}
	total = __shfl_sync(0xffffffffu, x, 31);
	return x - v;
}

// seq_states runs one stream's FSE state over a segment's k sequences,
// last first, as the encoder meets them, recording the state before each
// (none for the block's last sequence, which sets the state and puts out
// nothing). st and started carry the state from the segment after this
// one. The chain is serial, one lane a stream, so it does only what the
// next state needs; the bits each state puts out are worked out by the
// whole warp afterwards (seq_bits).
__device__ void seq_states(const SeqTable &T, const uint8_t *code, const uint16_t *step, uint16_t *sv, uint32_t k,
                           uint32_t e0, uint32_t &st, bool started)
{
	int j = (int)k - 1;
	if (!started) {
		st = seq_init(T, code[j], e0);
		j--;
	}
	if (T.rle) {
		// State 0 for every sequence, from which seq_bits finds no bits.
		for (; j >= 0; j--)
			sv[j] = 0;
		return;
	}
#pragma unroll 8 // seq_step says why eight
	for (; j >= 0; j--) {
		// The step is loaded before the store: ptxas keeps a load after
		// a store it may alias, and the store waits on the state.
		const uint32_t w = step[j];
		sv[j] = (uint16_t)st;
		st = seq_step(st, w, e0);
	}
}

// seq_bits is sequence j's bits in stream order (the OF, ML and LL states,
// then the LL, ML and OF extra bits), and their count in n: the states
// and the LL extra bits (at most 42) in the value, the ML and OF extra
// bits (at most 26) in hi, their count in nhi. init marks the block's last
// sequence, whose states put out nothing. An RLE stream's states are all
// 0 (seq_states), from which its transform (build_seq_table) puts out
// nothing, so the lanes take one path.
__device__ __forceinline__ uint64_t seq_bits(const SeqShared &S, uint32_t j, bool init, uint32_t &n, uint32_t &hi,
                                             uint32_t &nhi)
{
	const uint32_t llc = S.g.code[0][j], ofc = S.g.code[1][j], mlc = S.g.code[2][j];
	uint32_t nb[3], val[3];
#pragma unroll
	for (int x = 0; x < 3; x++) {
		const uint32_t st = S.g.sv[x][j];
		nb[x] = init ? 0 : seq_nbits(st, S.t[x].sym[x == 0 ? llc : x == 1 ? ofc : mlc]);
		val[x] = st & ((1u << nb[x]) - 1);
	}
	uint64_t v = val[1];
	uint32_t at = nb[1];
	v |= (uint64_t)val[2] << at;
	at += nb[2];
	v |= (uint64_t)val[0] << at;
	at += nb[0];
	const uint32_t lx = llc < kLLPlain ? llc : S.llExtra[llc - kLLPlain];
	const uint32_t mx = mlc < kMLPlain ? mlc + 3 : S.mlExtra[mlc - kMLPlain];
	v |= (uint64_t)(S.g.ll[j] - (lx & 0xFFFFFF)) << at;
	n = at + (lx >> 24);
	hi = (S.g.ml[j] - (mx & 0xFFFFFF)) | (S.g.ov[j] & ((1u << ofc) - 1)) << (mx >> 24);
	nhi = (mx >> 24) + ofc;
	return v;
}

// stage_or ORs the n low bits of v (n ≤ 64) into the stage at bit at.
__device__ __forceinline__ void stage_or(uint32_t *stage, uint32_t at, uint64_t v, uint32_t n)
{
	const uint32_t sh = at & 31, wi = at >> 5;
	atomicOr(&stage[wi], (uint32_t)(v << sh));
	atomicOr(&stage[wi + 1], (uint32_t)((v << sh) >> 32));
	if (sh != 0 && n + sh > 64)
		atomicOr(&stage[wi + 2], (uint32_t)(v >> (64 - sh)));
}

// SlotRegs holds a segment's packed sequences and their side slots in the
// warp's registers, sequence lane + 32r in q[r] and x[r]. The slots come
// from DRAM (every segment's, written by the parse), so seq_fill (and the
// histograms' pass) loads a segment's while it takes the one before:
// loaded as it is needed, each
// of a block's 256 segments made the warp wait out a DRAM round trip, in
// each of its two passes. A side slot is loaded whether or not its
// sequence escapes, so that both loads go out together.
constexpr uint32_t kSlotRounds = (kSlotSeqs + 31) / 32;
struct SlotRegs {
	uint32_t q[kSlotRounds], x[kSlotRounds];
	__device__ __forceinline__ void load(const uint32_t *__restrict__ seqBuf, const uint32_t *__restrict__ side,
	                                     uint64_t g0, uint32_t s, uint32_t k, unsigned lane)
	{
		const uint64_t at = (g0 + s) * kSlotStride;
#pragma unroll
		for (uint32_t r = 0; r < kSlotRounds; r++) {
			const uint32_t j = lane + 32 * r;
			q[r] = j < k ? __ldg(seqBuf + at + j) : 0;
			x[r] = j < k ? __ldg(side + at + j) : 0;
		}
	}
	// load_seqs loads only the packed sequences (zl_compact's).
	__device__ __forceinline__ void load_seqs(const uint32_t *__restrict__ seqBuf, uint64_t g0, uint32_t s, uint32_t k,
	                                          unsigned lane)
	{
		const uint64_t at = (g0 + s) * kSlotStride;
#pragma unroll
		for (uint32_t r = 0; r < kSlotRounds; r++) {
			const uint32_t j = lane + 32 * r;
			q[r] = j < k ? __ldg(seqBuf + at + j) : 0;
		}
	}
	// ov is sequence lane + 32r's Offset_Value, from its side slot when
	// escaped.
	__device__ __forceinline__ uint32_t ov(uint32_t r) const
	{
		return seq_ov(q[r]) == kOvEscape ? x[r] : seq_ov(q[r]);
	}
};

// seq_gather puts segment s's k sequences (here; the first one's literal
// length with the carry from before the segment added) into S.g's
// entries from pos, with their codes and transforms, for seq_fill.
// The codes are the first pass's again, worked out anew: a block's codes
// (3 bytes a sequence, up to 26,000 sequences) would not fit beside the
// warp's shared memory, and they are a few instructions a lane.
__device__ __forceinline__ void seq_gather(SeqShared &S, const SlotRegs &here, uint32_t k, uint32_t pos, uint32_t s,
                                           unsigned lane)
{
#pragma unroll
	for (uint32_t r = 0; r < kSlotRounds; r++) {
		const uint32_t j = lane + 32 * r, q = here.q[r];
		if (j >= k)
			continue;
		const uint32_t ll = seq_ll(q) + (j == 0 ? seq_carry(S.meta[s]) : 0), ml = seq_ml(q);
		const uint32_t ov = here.ov(r);
		const uint32_t i = pos + j;
		S.g.ll[i] = ll;
		S.g.ml[i] = ml;
		S.g.ov[i] = ov;
		const uint32_t cd[3] = {ll_code(ll), (uint32_t)high_bit(ov), ml_code(ml)};
#pragma unroll
		for (int x = 0; x < 3; x++) {
			S.g.code[x][i] = (uint8_t)cd[x];
			S.g.step[x][i] = (uint16_t)S.t[x].sym[cd[x]];
		}
	}
}

// SeqPlace is what carries from one batch of a block's sequences to the
// next on the warp that codes the block: the bits put out, the stage's
// first word's place in the section, and whether a batch has been placed.
// The streams' states carry on the lanes that run the chains (seq_rounds).
struct SeqPlace {
	uint32_t bits, stage0;
	bool started;
};

// seq_place_batch places the bits of the batch of sequences in S.g's
// entries pos to kSlotSeqs, last first, whose states the chains have
// recorded, in the stage, and flushes the stage's complete words to w.
// The warp's.
__device__ void seq_place_batch(SeqShared &S, uint32_t pos, const BitOut &w, SeqPlace &c, unsigned lane)
{
	const uint32_t k = kSlotSeqs - pos;
	const bool first = !c.started;
	c.started = true;
	__syncwarp();
	for (uint32_t e0 = 0; e0 < k; e0 += 32) {
		const uint32_t e = e0 + lane;
		uint64_t v = 0;
		uint32_t nv = 0, hi = 0, nhi = 0;
		if (e < k)
			v = seq_bits(S, kSlotSeqs - 1 - e, first && e == 0, nv, hi, nhi);
		uint32_t total;
		const uint32_t at = c.bits + warp_excl_scan(nv + nhi, lane, total) - 32 * c.stage0;
		if (nv != 0)
			stage_or(S.g.stage, at, v, nv);
		if (nhi != 0)
			stage_or(S.g.stage, at + nv, hi, nhi);
		c.bits += total;
	}
	__syncwarp();
	// Flush the complete words.
	const uint32_t full = c.bits / 32 - c.stage0;
	uint8_t *dst = w.out + S.hdr + 4 * c.stage0;
	// Bytes past the room are never written; the section then does not
	// fit, which lane 0 finds from its final length.
	const uint32_t used = S.hdr + 4 * c.stage0;
	const uint32_t room = w.limit > used ? w.limit - used : 0;
	for (uint32_t i = lane; i < full; i += 32) {
		const uint32_t x = S.g.stage[i];
		for (uint32_t b = 0; b < 4; b++)
			if (4 * i + b < room)
				dst[4 * i + b] = (uint8_t)(x >> (8 * b));
	}
	__syncwarp();
	const uint32_t tail = S.g.stage[full];
	__syncwarp();
	// No bit lies past word full, so the words above it are still zero.
	for (uint32_t i = lane; i <= full; i += 32)
		S.g.stage[i] = i == 0 ? tail : 0;
	c.stage0 += full;
	__syncwarp();
}

// The first pass, the codes' histograms, takes a block one of two ways,
// by its average sequences a segment: a warp a segment, its lanes taking
// the segment's sequences (dense blocks: dim frames' segments hold 77 on
// average, bright cells' 28), or a lane a segment, each walking its own
// (sparse ones: flat fields, 8-bit frames), where a warp a segment left
// most lanes idle and paid a segment's loads and checks for a handful.
// Measured on an H100 (zl_seq, ms a GiB, level 1), a warp a segment
// against a lane a segment: flat fields 1.38 against 1.05, saturated
// 8-bit frames 1.37 against 1.00, 8-bit frames 1.98 against 1.79; bright
// cells 3.65 against 4.38, dim frames 6.10 against 8.44.
constexpr uint32_t kHistByLaneBelow = 20;

__device__ __forceinline__ void seq_count(SeqShared &S, uint32_t q, uint32_t ov, uint32_t carry)
{
	atomicAdd(&S.c.hll[ll_code(seq_ll(q) + carry)], 1u);
	atomicAdd(&S.c.hml[ml_code(seq_ml(q))], 1u);
	atomicAdd(&S.c.hof[high_bit(ov)], 1u);
}

__device__ void seq_histograms_by_lane(SeqShared &S, const uint32_t *__restrict__ seqBuf,
                                       const uint32_t *__restrict__ side, uint64_t g0, uint32_t nsegs, unsigned lane)
{
	for (uint32_t s0 = 0; s0 < nsegs; s0 += 32) {
		const uint32_t s = s0 + lane;
		const uint32_t k = s < nsegs ? meta_nseq(S.meta[s]) : 0;
		const uint64_t at = (g0 + s) * kSlotStride;
		for (uint32_t j = 0; j < k; j++) {
			const uint32_t q = __ldg(seqBuf + at + j);
			seq_count(S, q, seq_ov(q) == kOvEscape ? __ldg(side + at + j) : seq_ov(q),
			          j == 0 ? seq_carry(S.meta[s]) : 0);
		}
	}
}

__device__ void seq_histograms_by_segment(SeqShared &S, const uint32_t *__restrict__ seqBuf,
                                          const uint32_t *__restrict__ side, uint64_t g0, uint32_t nsegs,
                                          unsigned lane)
{
	SlotRegs cur;
	cur.load(seqBuf, side, g0, 0, meta_nseq(S.meta[0]), lane);
	for (uint32_t s = 0; s < nsegs; s++) {
		const uint32_t k = meta_nseq(S.meta[s]);
		const SlotRegs here = cur;
		if (s + 1 < nsegs)
			cur.load(seqBuf, side, g0, s + 1, meta_nseq(S.meta[s + 1]), lane);
#pragma unroll
		for (uint32_t r = 0; r < kSlotRounds; r++) {
			const uint32_t j = lane + 32 * r;
			if (j < k)
				seq_count(S, here.q[r], here.ov(r), j == 0 ? seq_carry(S.meta[s]) : 0);
		}
	}
}

// carry_after is the carry out of the segment of summary m, c carried in.
__device__ __forceinline__ uint32_t carry_after(uint32_t c, uint32_t m)
{
	return (meta_nseq(m) != 0 ? 0 : c) + meta_trail(m);
}

// seq_carries rewrites S.meta with each segment's carry (the literals
// its first sequence carries from the segments before it: those after the
// last match, in segments without one too) and fills S.nseq and S.nlit,
// the block's totals, from the segments' summary words. A carry steps as
// c -> (k != 0 ? 0 : c) + trail, which composes: a run of segments is one
// step, "reset or not, then add". Each lane takes eight consecutive segments, the warp
// scans the lanes' steps, and each lane then walks its eight from the
// carry into them. One lane walking all 256 while the others waited cost
// zl_seq 0.3 to 1.5% more (dim frames 5.75 -> 5.73 ms a GiB, saturated
// 8-bit frames 1.00 -> 0.99; H100, two rounds side by side).
constexpr uint32_t kCarrySegs = kSegsPerBlock / 32;
__device__ __forceinline__ void seq_carries(SeqShared &S, uint32_t nsegs, unsigned lane)
{
	uint32_t m[kCarrySegs];
	const uint32_t s0 = lane * kCarrySegs;
#pragma unroll
	for (uint32_t i = 0; i < kCarrySegs; i++)
		m[i] = s0 + i < nsegs ? S.meta[s0 + i] : 0; // 0: no sequence, nothing to carry
	bool reset = false;
	uint32_t add = 0, nseq = 0, nlit = 0;
#pragma unroll
	for (uint32_t i = 0; i < kCarrySegs; i++) {
		add = carry_after(add, m[i]);
		reset |= meta_nseq(m[i]) != 0;
		nseq += meta_nseq(m[i]);
		nlit += meta_nlit(m[i]);
	}
	// Inclusive scan of the lanes' steps, the earlier lane's first.
	for (int d = 1; d < 32; d <<= 1) {
		const bool r = __shfl_up_sync(0xffffffffu, reset, d);
		const uint32_t a = __shfl_up_sync(0xffffffffu, add, d);
		if (lane >= (unsigned)d) {
			add = reset ? add : a + add;
			reset |= r;
		}
	}
	// From carry 0, a run's step gives its add: the carry into lane's
	// segments is the add of the lanes before.
	uint32_t carry = __shfl_up_sync(0xffffffffu, add, 1);
	if (lane == 0)
		carry = 0;
#pragma unroll
	for (uint32_t i = 0; i < kCarrySegs; i++) {
		// Each lane rewrites the words it read, and it read them all
		// before the scan.
		if (s0 + i < nsegs)
			S.meta[s0 + i] = meta_nseq(m[i]) | carry << 8;
		carry = carry_after(carry, m[i]);
	}
	const uint32_t tseq = __reduce_add_sync(0xffffffffu, nseq), tlit = __reduce_add_sync(0xffffffffu, nlit);
	if (lane == 0) {
		S.nseq = tseq;
		S.nlit = tlit;
	}
}

#endif
