// zstdlit_seqrounds.cuh: how zl_seq's warps code their blocks' sequences
// sections with zstdlit_seq.cuh's parts: a block's setup, its batches
// (seq_fill), its close, and the rounds in which a CTA's warps share one
// warp's lanes for the state chains of dense blocks (seq_rounds). Included
// by zstdlit.cuh inside namespace zl, after zstdlit_seq.cuh.

#ifndef ZSPOOL_ZSTDLIT_SEQROUNDS_CUH
#define ZSPOOL_ZSTDLIT_SEQROUNDS_CUH

// SeqBlock is what a warp keeps in registers while it codes a block's
// sequences section: where the section goes (w), the bits placed so far,
// and where its walk over the segments stands, last first (seq_fill).
struct SeqBlock {
	BitOut w;
	SeqPlace place;
	const uint32_t *seqBuf, *side;
	uint64_t g0;
	SlotRegs cur; // segment s's slots, loaded ahead
	int s;        // the next segment, -1 once all are taken
	__device__ __forceinline__ bool more() const { return s >= 0; }
};

// seq_setup starts block bi's sequences section (zstdlit's
// appendSequences): the segments' carries, the codes' histograms, the
// three tables and the section's header, written after where the block's
// literals will be packed in lit. It reports whether the block has
// sequences to code; one without records so in its Block. One warp.
__device__ bool seq_setup(uint64_t chunk_bytes, uint32_t bpc, const uint32_t *__restrict__ nonfill,
                          const uint32_t *__restrict__ seqBuf, const uint32_t *__restrict__ side,
                          const uint32_t *__restrict__ segMeta, uint8_t *__restrict__ lit, Block *__restrict__ blocks,
                          uint64_t bi, SeqShared &S, SeqBlock &B, unsigned lane)
{
	Block *out = blocks + bi;
	uint64_t chunk, off;
	uint32_t n;
	block_geometry(chunk_bytes, bpc, bi, chunk, off, n);
	const bool skip = block_skipped(nonfill, chunk, n);
	const uint32_t nsegs = block_segs(n);
	const uint64_t g0 = block_first_seg(chunk_bytes, bpc, chunk, bi);
	for (uint32_t s = lane; !skip && s < nsegs; s += 32)
		S.meta[s] = segMeta[g0 + s];
	__syncwarp();
	if (!skip)
		seq_carries(S, nsegs, lane);
	else if (lane == 0)
		S.nseq = S.nlit = 0;
	for (int i = lane; i < kLLSyms + kMLSyms + kOFSyms; i += 32)
		(i < kLLSyms ? S.c.hll[i] : i < kLLSyms + kMLSyms ? S.c.hml[i - kLLSyms] : S.c.hof[i - kLLSyms - kMLSyms]) = 0;
	__syncwarp();
	if (skip || S.nseq == 0) {
		if (lane == 0) {
			out->nseq = 0;
			out->lit_n = n;
			out->seq_len = 1;
		}
		return false;
	}
	if (S.nseq < kHistByLaneBelow * nsegs)
		seq_histograms_by_lane(S, seqBuf, side, g0, nsegs, lane);
	else
		seq_histograms_by_segment(S, seqBuf, side, g0, nsegs, lane);
	__syncwarp();
	const uint32_t nseq = S.nseq;
	// The three tables are built side by side, one lane each, on one path
	// (three branches would run one after the other).
	if (lane < 3)
		build_seq_table(S.t[lane], S.next + (lane == 0 ? 0 : lane == 1 ? kSeqNextLL : kSeqNextLL + kSeqNextOF),
		                lane == 0 ? 0 : lane == 1 ? kSeqNextLL : kSeqNextLL + kSeqNextOF, S.c.ncount[lane],
		                S.c.spread + (lane == 0 ? 0 : lane == 1 ? 512 : 768), S.c.work[lane],
		                lane == 0 ? S.c.hll : lane == 1 ? S.c.hof : S.c.hml,
		                lane == 0 ? kLLSyms : lane == 1 ? kOFSyms : kMLSyms, lane == 1 ? 8 : 9, nseq);
	__syncwarp();
	B.w = BitOut{lit + chunk * chunk_bytes + off + S.nlit, 0, n - S.nlit, 0, 0, false};
	BitOut &w = B.w;
	if (lane == 0) {
		if (nseq < 128) {
			w.put_byte((uint8_t)nseq);
		} else if (nseq < 0x7F00) {
			w.put_byte((uint8_t)((nseq >> 8) + 0x80));
			w.put_byte((uint8_t)nseq);
		} else {
			w.put_byte(0xFF);
			w.put_byte((uint8_t)(nseq - 0x7F00));
			w.put_byte((uint8_t)((nseq - 0x7F00) >> 8));
		}
		w.put_byte((uint8_t)(S.t[0].mode << 6 | S.t[1].mode << 4 | S.t[2].mode << 2));
		for (int x = 0; x < 3; x++)
			for (uint32_t i = 0; i < S.t[x].ncountLen; i++)
				w.put_byte(S.c.ncount[x][i]);
	}
	if (lane == 0)
		S.hdr = w.len;
	// Lane 0 has read the descriptions (S.c) before any lane writes S.g,
	// the same memory.
	__syncwarp();
	for (uint32_t i = lane; i < kSeqStageWords; i += 32)
		S.g.stage[i] = 0;
	B.place = SeqPlace{0, 0, false};
	B.seqBuf = seqBuf;
	B.side = side;
	B.g0 = g0;
	B.s = (int)nsegs - 1;
	B.cur.load(seqBuf, side, g0, nsegs - 1, meta_nseq(S.meta[nsegs - 1]), lane);
	return true;
}

// seq_fill gathers the block's next segments, last first, into a batch at
// the top of S.g (entries pos to kSlotSeqs) until the next would not fit,
// and returns pos; that one stays in B.cur for the next batch, which it
// fits (a segment holds at most kSlotSeqs). Most segments hold a few dozen
// sequences, and the chains, the bits' placing and the flush each cost as
// much for a few as for a full batch. One warp.
__device__ uint32_t seq_fill(SeqShared &S, SeqBlock &B, unsigned lane)
{
	uint32_t pos = kSlotSeqs;
	while (B.s >= 0) {
		const uint32_t s = (uint32_t)B.s, k = meta_nseq(S.meta[s]);
		if (k > pos)
			break;
		const SlotRegs here = B.cur;
		if (s > 0)
			B.cur.load(B.seqBuf, B.side, B.g0, s - 1, meta_nseq(S.meta[s - 1]), lane);
		B.s--;
		if (k == 0)
			continue;
		pos -= k;
		seq_gather(S, here, k, pos, s, lane);
	}
	return pos;
}

// seq_close writes the rest of the section, the final states and the
// closing bit, and records in the block whether its matches are kept:
// only when the section fits in the bytes they cover. Lane 0.
__device__ void seq_close(const SeqShared &S, SeqBlock &B, Block *__restrict__ out)
{
	BitOut &w = B.w;
	w.len = S.hdr + 4 * B.place.stage0;
	w.acc = S.g.stage[0];
	w.nbits = B.place.bits - 32 * B.place.stage0;
	if (!S.t[2].rle)
		w.add(S.fin[2], S.t[2].log);
	if (!S.t[1].rle)
		w.add(S.fin[1], S.t[1].log);
	if (!S.t[0].rle)
		w.add(S.fin[0], S.t[0].log);
	w.close();
	const bool fits = !w.over && w.len <= w.limit;
	out->nseq = fits ? S.nseq : 0;
	out->lit_n = fits ? S.nlit : w.limit + S.nlit; // the block's bytes, whole
	out->seq_len = fits ? w.len : 1;
}

// A segment is full when it holds more than half a batch: it is then a
// batch of its own (seq_fill). A CTA's warps code their blocks together
// when at least kSeqFullOf8 of every 8 of their segments are full.
constexpr uint32_t kSeqFullAbove = kSlotSeqs / 2, kSeqFullOf8 = 7;

// seq_cta_dense reports whether the CTA's warps code their blocks from b0
// on (kSeqWarps, those below n_blocks) together (seq_rounds): when at
// least kSeqFullOf8 of every 8 of their segments are full. Then every
// block takes about as many batches as it has segments, and the rounds,
// as many as the CTA's fullest block takes, leave few warps idle. Coded
// together, zl_seq took 7 to 10% less time where blocks averaged 76 to
// 84 sequences a segment and 5 to 12% more at 8 to 56 (H100). The line
// was an average of 64 until dim frames at level 1 came in at 59.8 (98%
// of their segments full; the Go reference, 2 MiB chunks): together,
// their zl_seq takes 9% less time (4.14 -> 3.77 ms a GiB, H200), where
// saturated 8-bit frames at level 3, 56.4 on average but 67% full, took
// 3% more (12% of their warps' rounds empty, against 0.2% on dim
// frames). Every warp works it out for itself, so that a CTA that codes
// its blocks apart never waits at a barrier.
__device__ bool seq_cta_dense(uint64_t chunk_bytes, uint32_t bpc, uint64_t n_blocks,
                              const uint32_t *__restrict__ nonfill, const uint32_t *__restrict__ segMeta, uint64_t b0,
                              unsigned lane)
{
	uint32_t full = 0, segs = 0;
	for (uint32_t v = 0; v < kSeqWarps && b0 + v < n_blocks; v++) {
		uint64_t chunk, off;
		uint32_t n;
		block_geometry(chunk_bytes, bpc, b0 + v, chunk, off, n);
		const uint32_t nsegs = block_segs(n);
		segs += nsegs;
		if (block_skipped(nonfill, chunk, n))
			continue;
		const uint64_t g0 = block_first_seg(chunk_bytes, bpc, chunk, b0 + v);
		for (uint32_t s = lane; s < nsegs; s += 32)
			full += meta_nseq(__ldg(segMeta + g0 + s)) > kSeqFullAbove;
	}
	return 8 * __reduce_add_sync(0xffffffffu, full) >= kSeqFullOf8 * segs;
}

// seq_chain runs stream x's state chain of V's batch from entry p, the
// state carrying in st and started.
__device__ __forceinline__ void seq_chain(SeqShared &V, uint32_t x, uint32_t p, uint32_t &st, bool &started)
{
	seq_states(V.t[x], V.g.code[x] + p, V.g.step[x] + p, V.g.sv[x] + p, kSlotSeqs - p, seq_e0(V.next), st, started);
	started = true;
}

// seq_rounds codes the sequences sections of the CTA's kSeqWarps blocks
// from b0 on, one a warp (a warp past n_blocks has none). A block's
// sequences are coded in batches: the warp gathers a batch, the three FSE
// state chains run over it, serial, a lane a stream, and the warp places
// its bits. On three lanes of the block's warp each step of a chain costs
// a warp instruction for three lanes' work: the chains took 38% of
// zl_seq's instructions on dim frames, whose issue slots were 64% busy
// (Nsight Compute, H100). Where the blocks are dense (seq_cta_dense), the
// warps go in rounds instead, a batch each, and warp 0 runs every block's
// chains at once, the streams' states carrying from round to round on its
// lanes 3v+x (block v, stream x).
__device__ void seq_rounds(uint64_t chunk_bytes, uint32_t bpc, uint64_t n_blocks, const uint32_t *__restrict__ nonfill,
                           const uint32_t *__restrict__ seqBuf, const uint32_t *__restrict__ side,
                           const uint32_t *__restrict__ segMeta, uint8_t *__restrict__ lit, Block *__restrict__ blocks,
                           uint64_t b0, SeqShared *all, unsigned w, unsigned lane)
{
	SeqShared &S = all[w];
	const uint64_t bi = b0 + w;
	const bool dense = seq_cta_dense(chunk_bytes, bpc, n_blocks, nonfill, segMeta, b0, lane);
	SeqBlock B;
	bool more = bi < n_blocks && seq_setup(chunk_bytes, bpc, nonfill, seqBuf, side, segMeta, lit, blocks, bi, S, B, lane);
	const bool coded = more;
	uint32_t st = 0;
	bool started = false;
	if (!dense) {
		// Apart: the block's own warp runs its chains on lanes 0 to 2.
		while (more) {
			const uint32_t pos = seq_fill(S, B, lane);
			__syncwarp();
			if (lane < 3)
				seq_chain(S, lane, pos, st, started);
			__syncwarp();
			seq_place_batch(S, pos, B.w, B.place, lane);
			more = B.more();
		}
		if (coded && lane < 3)
			S.fin[lane] = st;
		__syncwarp();
		if (coded && lane == 0)
			seq_close(S, B, blocks + bi);
		return;
	}
	// Warp 0's chain lanes: lane 3v + x runs stream x of warp v's block.
	const bool chain = w == 0 && lane < 3 * kSeqWarps;
	SeqShared &V = all[chain ? lane / 3 : 0];
	const uint32_t x = chain ? lane % 3 : 0;
	while (__syncthreads_or(more)) {
		const uint32_t pos = more ? seq_fill(S, B, lane) : kSlotSeqs;
		if (lane == 0)
			S.batch = pos;
		__syncthreads();
		if (chain && V.batch < kSlotSeqs)
			seq_chain(V, x, V.batch, st, started);
		__syncthreads();
		if (pos < kSlotSeqs)
			seq_place_batch(S, pos, B.w, B.place, lane);
		more = more && B.more();
	}
	if (chain)
		V.fin[x] = st;
	__syncthreads();
	if (coded && lane == 0)
		seq_close(S, B, blocks + bi);
}

#endif
