// zstdlit_tree.cuh: zl_tree's device code: the Huffman tree description
// (the weights, FSE-coded or direct; zstdlit/fse.go, zstdlit/huff.go), the
// literals header and jump table, and the block's type, for the blocks
// zl_plan left kTree. Included by zstdlit.cuh inside namespace zl, after
// zstdlit_plan.cuh.
//
// This work is serial: each accuracy log's FSE state chain runs over up
// to 255 weights. Inside zl_plan two threads of the CTA ran it while the
// other 254 waited at the barrier after them: 27% of zl_plan's stall
// samples there and 22% of its issued instructions on a single lane
// (Nsight Compute, H200, flat fields). Here a lane takes one block and
// one log, so a warp runs sixteen blocks' chains at once.

#ifndef ZSPOOL_ZSTDLIT_TREE_CUH
#define ZSPOOL_ZSTDLIT_TREE_CUH

// FseScratch is fse_weights' scratch and fse_encode_states' encoding
// table, in shared memory: in local memory every step of the chain waited
// on local loads.
struct FseScratch {
	FseWork<kMaxWeight> w;
	uint8_t spread[64];
	uint16_t state[64];
	uint32_t deltaNbBits[kMaxWeight];
	int32_t deltaFind[kMaxWeight];
};

// fse_weight_step codes symbol s from state x: its bits to w, then the
// next state.
__device__ __forceinline__ void fse_weight_step(const FseScratch &F, uint32_t &x, int s, BitOut &w)
{
	const uint32_t nbOut = (x + F.deltaNbBits[s]) >> 16;
	w.add(x, nbOut);
	x = F.state[(int32_t)(x >> nbOut) + F.deltaFind[s]];
}

// fse_encode_states appends the two-state FSE bitstream of ws to out at
// len, with the state table the decoder builds from norm, and returns the
// new length. zstdlit's fseEncodeWith after the description. The states
// take the symbols in turn, the last symbol's state first.
__device__ uint32_t fse_encode_states(const uint8_t *ws, int nws, const int16_t *norm, int maxSym, int log, uint8_t *out,
                                      uint32_t len, FseScratch &F)
{
	fse_build_ctable(norm, maxSym, log, F.spread, F.w.next, F.state, F.deltaNbBits, F.deltaFind);
	BitOut w{out, len, UINT32_MAX, 0, 0, false}; // the caller sized out
	const int n = nws;
	// a takes symbols n-1, n-3, ...; b takes n-2, n-4, ...
	uint32_t a = fse_init_state(F.state, F.deltaNbBits, F.deltaFind, ws[n - 1]);
	uint32_t b = fse_init_state(F.state, F.deltaNbBits, F.deltaFind, ws[n - 2]);
	int i = n - 3;
	for (; i >= 1; i -= 2) {
		fse_weight_step(F, a, ws[i], w);
		fse_weight_step(F, b, ws[i - 1], w);
	}
	if (i == 0)
		fse_weight_step(F, a, ws[0], w);
	// The state of odd symbols first, then of even ones.
	const bool aOdd = ((n - 1) & 1) != 0;
	w.add(aOdd ? a : b, (uint32_t)log);
	w.add(aOdd ? b : a, (uint32_t)log);
	w.close();
	return w.len;
}

// fse_weights writes the table description and two-state bitstream of ws
// with accuracy log `log` into out (room for 256 bytes) and returns its
// length. count/maxSym are the weights' histogram and largest weight.
__device__ uint32_t fse_weights(const uint8_t *ws, int nws, const uint32_t *count, int maxSym, int log, uint8_t *out,
                                FseScratch &F)
{
	fse_normalize(count, maxSym, log, F.w.norm, F.w.rem);
	const uint32_t len = fse_write_ncount(F.w.norm, maxSym, log, out);
	return fse_encode_states(ws, nws, F.w.norm, maxSym, log, out, len, F);
}

// write_literals_header writes the Huffman literals header, tree
// description and jump table of n literals into out and returns the
// section's bytes, or 0 where Huffman cannot code them. ws holds the nws
// weights; fse[i] and fseLen[i] their FSE description with accuracy log 5
// + i, where fsePossible; bits each stream's bits. One thread.
__device__ uint32_t write_literals_header(const uint8_t *ws, int nws, bool fsePossible, const uint8_t *const fse[2],
                                          const uint32_t fseLen[2], const uint32_t bits[4], uint32_t n, Block *out)
{
	const bool four = n > 1023;
	// The tree description, the streams' sizes and the literals header.
	uint8_t *h = out->hdr;
	uint32_t descLen = 0;
	const int which = fsePossible && fseLen[1] < fseLen[0] ? 1 : 0;
	const bool fseOK = fsePossible && fseLen[which] <= 127;
	const bool direct = nws <= 128;
	const uint32_t directSize = 1 + (nws + 1) / 2;
	const uint32_t hdrSize = four ? 5 : 3; // the largest; moved down below
	uint8_t *d = h + hdrSize;
	if (fseOK && (!direct || 1 + fseLen[which] <= directSize)) {
		d[0] = (uint8_t)fseLen[which];
		for (uint32_t i = 0; i < fseLen[which]; i++)
			d[1 + i] = fse[which][i];
		descLen = 1 + fseLen[which];
	} else if (direct) {
		d[0] = (uint8_t)(127 + nws);
		for (int i = 0; i < nws; i += 2) {
			uint8_t b = ws[i] << 4;
			if (i + 1 < nws)
				b |= ws[i + 1];
			d[1 + i / 2] = b;
		}
		descLen = directSize;
	} else {
		return 0;
	}
	uint32_t streams[4], comp = descLen;
	for (int s = 0; s < 4; s++) {
		streams[s] = (four || s == 0) ? (bits[s] + 8) / 8 : 0;
		comp += streams[s];
	}
	uint64_t lh;
	uint32_t size;
	if (four) {
		if (streams[0] > 0xFFFF || streams[1] > 0xFFFF || streams[2] > 0xFFFF)
			return 0;
		comp += 6;
		uint8_t *jt = d + descLen;
		for (int s = 0; s < 3; s++)
			put_le(jt + 2 * s, streams[s], 2);
	}
	if (!four) {
		if (comp > 1023)
			return 0;
		lh = 2 | 0 << 2 | (uint64_t)n << 4 | (uint64_t)comp << 14;
		size = 3;
	} else if (n <= 0x3FFF && comp <= 0x3FFF) {
		lh = 2 | 2 << 2 | (uint64_t)n << 4 | (uint64_t)comp << 18;
		size = 4;
	} else if (n <= 0x3FFFF && comp <= 0x3FFFF) {
		lh = 2 | 3 << 2 | (uint64_t)n << 4 | (uint64_t)comp << 22;
		size = 5;
	} else {
		return 0;
	}
	const uint32_t tail = descLen + (four ? 6 : 0);
	if (size < hdrSize)
		for (uint32_t i = 0; i < tail; i++)
			h[size + i] = h[hdrSize + i];
	put_le(h, lh, (int)size);
	out->hdr_len = size + tail;
	out->streams = four ? 4 : 1;
	for (int s = 0; s < 4; s++)
		out->stream[s] = streams[s];
	return size + comp;
}

// kTreeThreads is zl_tree's CTA: kTreeThreads / 2 blocks, a thread for
// each of the two accuracy logs.
constexpr int kTreeThreads = 32;

// TreeShared holds the CTA's weights (a block's, built by the thread of
// log 5) and each thread's FSE tables and description.
struct TreeShared {
	uint8_t ws[kTreeThreads / 2][256];
	uint32_t wcount[kTreeThreads / 2][kMaxWeight];
	FseScratch F[kTreeThreads];
	uint8_t fse[kTreeThreads][264];
	uint32_t fseLen[kTreeThreads];
};

// tree_block finishes block bi (active: it is kTree) on the two threads of
// its pair: the thread of log 5 (even t) lists the weights from the
// block's code table, both FSE-code them, and the thread of log 5 writes
// the header and chooses the literals section, as zl_plan does for the
// blocks without Huffman literals. Every thread of the warp calls it.
__device__ void tree_block(uint64_t chunk_bytes, uint32_t bpc, Block *__restrict__ out,
                           const uint32_t *__restrict__ table, uint64_t bi, bool active, TreeShared &S)
{
	const unsigned t = threadIdx.x, pair = t / 2;
	const bool first = (t & 1) == 0;
	uint8_t *ws = S.ws[pair];
	uint32_t *wcount = S.wcount[pair];
	int nws = 0;
	if (active) {
		const uint32_t tree = out->tree;
		const int maxBit = (int)(tree & 0xff);
		nws = (int)(tree >> 8);
		if (first) {
			for (int s = 0; s < nws; s++) {
				const uint32_t l = table[s] >> 16;
				ws[s] = (uint8_t)huff_weight(l, maxBit);
			}
			for (int w = 0; w < kMaxWeight; w++)
				wcount[w] = out->wcount[w];
		}
	}
	__syncwarp();
	bool fsePossible = false;
	if (active) {
		int distinct = 0, maxW = 0;
		for (int w = 0; w < kMaxWeight; w++)
			if (wcount[w] != 0) {
				distinct++;
				maxW = w;
			}
		fsePossible = nws >= 2 && distinct >= 2;
		if (fsePossible)
			S.fseLen[t] = fse_weights(ws, nws, wcount, maxW, first ? 5 : 6, S.fse[t], S.F[t]);
	}
	__syncwarp();
	if (!active || !first)
		return;
	uint64_t chunk, off;
	uint32_t n;
	block_geometry(chunk_bytes, bpc, bi, chunk, off, n);
	const uint32_t L = out->nseq != 0 ? out->lit_n : n;
	const uint8_t *const fse[2] = {S.fse[t], S.fse[t + 1]};
	const uint32_t fseLen[2] = {S.fseLen[t], S.fseLen[t + 1]};
	const uint32_t bits[4] = {out->stream[0], out->stream[1], out->stream[2], out->stream[3]};
	const uint32_t huffSize = write_literals_header(ws, nws, fsePossible, fse, fseLen, bits, L, out);
	choose_literals(huffSize, nullptr, L, n, false, out);
}

#endif
