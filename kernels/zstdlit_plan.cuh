// zstdlit_plan.cuh: zl_plan's device code (histograms, Huffman lengths and
// codes, the block's type when it is not Huffman-coded; the tree
// description and the Huffman literals header are zstdlit_tree.cuh's).
// Included by zstdlit.cuh inside namespace zl, after zstdlit_fse.cuh.

#ifndef ZSPOOL_ZSTDLIT_PLAN_CUH
#define ZSPOOL_ZSTDLIT_PLAN_CUH

// ---------------------------------------------------------------------------
// zl_plan

// kMaxWeight bounds the Huffman weights: 0 (absent) to 11 (kMaxBits).
constexpr int kMaxWeight = 12;

// huff_weight is the weight of a symbol whose code has l bits (0: absent)
// in a code whose longest has maxBit (RFC 8878 §4.2.1.1).
__device__ __forceinline__ uint32_t huff_weight(uint32_t l, int maxBit)
{
	return l != 0 ? (uint32_t)maxBit + 1 - l : 0;
}

struct PlanShared {
	uint32_t wh[kWarps][256]; // per-warp histograms
	uint32_t seg[4][256];     // per-stream-segment histograms
	uint32_t hist[256];
	uint32_t leafW[256];
	uint8_t leafSym[256];
	uint32_t cur[2][512]; // package-merge lists, double-buffered
	alignas(16) uint32_t pk[256];
	uint16_t leafPos[kMaxBits - 1][256]; // leaf i's position in list k (k = 2..11)
	uint32_t lcount[kMaxBits + 1];       // leaves selected from list k
	uint8_t nb[256];                     // code length per symbol
	uint32_t bits[4];
	uint32_t wcount[kMaxWeight];
	uint32_t wlen[kWarps][kMaxBits + 1]; // each warp's symbols of each code length
	uint32_t lenCount[kMaxBits + 1];     // the block's
	int maxBit, maxSym;
	uint8_t first;
};

__device__ __forceinline__ void count_bytes(uint32_t *h, uint32_t v)
{
	atomicAdd(&h[v & 0xff], 1u);
	atomicAdd(&h[(v >> 8) & 0xff], 1u);
	atomicAdd(&h[(v >> 16) & 0xff], 1u);
	atomicAdd(&h[v >> 24], 1u);
}

// histogram_range counts bytes [a, b) of p into h (one warp).
__device__ void histogram_range(const uint8_t *p, uint32_t a, uint32_t b, uint32_t *h, unsigned lane)
{
	if (a >= b)
		return;
	const uintptr_t base = (uintptr_t)(p + a);
	uint32_t head = (uint32_t)((16 - (base & 15)) & 15);
	if (head > b - a)
		head = b - a;
	if (lane < head)
		atomicAdd(&h[p[a + lane]], 1u);
	const uint32_t s = a + head;
	const uint32_t vecs = (b - s) / 16;
	const uint4 *v = reinterpret_cast<const uint4 *>(p + s);
	for (uint32_t i = lane; i < vecs; i += 32) {
		const uint4 x = v[i];
		count_bytes(h, x.x);
		count_bytes(h, x.y);
		count_bytes(h, x.z);
		count_bytes(h, x.w);
	}
	for (uint32_t i = s + vecs * 16 + lane; i < b; i += 32)
		atomicAdd(&h[p[i]], 1u);
}

// block_sum adds x over the CTA; every thread gets the sum.
__device__ __forceinline__ uint32_t block_sum(uint32_t x, uint32_t *scratch)
{
	for (int d = 16; d > 0; d >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, d);
	__syncthreads();
	if ((threadIdx.x & 31) == 0)
		scratch[threadIdx.x >> 5] = x;
	__syncthreads();
	uint32_t t = 0;
	for (int w = 0; w < kWarps; w++)
		t += scratch[w];
	return t;
}

// count_below is the number of the first n (at most 511) entries of the
// sorted a that are < x (or ≤ x when inclusive), in nine fixed steps
// without a branch, so that the two searches a thread makes in a round of
// package-merge can interleave their loads. Halving [lo, hi) with a
// branch a step, the searches' dependent loads took 22% of zl_plan's stall
// samples (Nsight Compute, H200, flat fields).
__device__ __forceinline__ uint32_t count_below(const uint32_t *a, uint32_t n, uint32_t x, bool inclusive)
{
	uint32_t pos = 0;
#pragma unroll
	for (uint32_t step = 256; step > 0; step >>= 1) {
		const uint32_t j = pos + step;
		const uint32_t v = j <= n ? a[j - 1] : 0xFFFFFFFFu; // weights stay far below it
		pos = (inclusive ? v <= x : v < x) ? j : pos;
	}
	return pos;
}

// huffman_lengths gives every present symbol its code length (S.nb) and
// finds the longest (S.maxBit): optimal lengths under the 11-bit limit by
// package-merge. Called by the whole CTA.
__device__ void huffman_lengths(PlanShared &S)
{
	const unsigned tid = threadIdx.x;
	// Leaves ranked by (count, symbol): a symbol's key is its count above
	// its value (a count is at most 2^17), an absent symbol's above every
	// key, and its rank the keys below its own, four to a load. Comparing
	// counts and then symbols took a fifth of zl_plan's instructions (Nsight
	// Compute, H200, flat fields). S.pk is free until package-merge.
	const uint32_t c = S.hist[tid];
	const uint32_t key = c != 0 ? c << 8 | tid : 0xFFFFFFFFu;
	S.pk[tid] = key;
	__syncthreads();
	if (c != 0) {
		uint32_t rank = 0;
		for (int u = 0; u < 256; u += 4) {
			const uint4 k = *reinterpret_cast<const uint4 *>(&S.pk[u]);
			rank += (uint32_t)(k.x < key) + (uint32_t)(k.y < key) + (uint32_t)(k.z < key) + (uint32_t)(k.w < key);
		}
		S.leafW[rank] = c;
		S.leafSym[rank] = (uint8_t)tid;
	}
	const int nl = __syncthreads_count(c != 0);
	// Package-merge: list 1 is the leaves; list k merges the leaves with
	// the pairs of list k−1 (a leaf first on equal weight).
	if (tid < (unsigned)nl)
		S.cur[0][tid] = S.leafW[tid];
	__syncthreads();
	uint32_t m = (uint32_t)nl;
	for (int k = 2; k <= kMaxBits; k++) {
		const uint32_t *cur = S.cur[k & 1];
		uint32_t *nxt = S.cur[(k + 1) & 1];
		const uint32_t np = m / 2;
		if (tid < np)
			S.pk[tid] = cur[2 * tid] + cur[2 * tid + 1];
		__syncthreads();
		// Both searches before either store, which the compiler would
		// otherwise order the second search's loads behind.
		const bool leaf = tid < (unsigned)nl, pack = tid < np;
		const uint32_t lw = leaf ? S.leafW[tid] : 0, pw = pack ? S.pk[tid] : 0;
		const uint32_t lpos = tid + count_below(S.pk, leaf ? np : 0, lw, false);
		const uint32_t ppos = tid + count_below(S.leafW, pack ? (uint32_t)nl : 0, pw, true);
		if (leaf) {
			S.leafPos[k - 2][tid] = (uint16_t)lpos;
			nxt[lpos] = lw;
		}
		if (pack)
			nxt[ppos] = pw;
		__syncthreads();
		m = (uint32_t)nl + np;
	}
	// Walk the selection down: the first 2n−2 items of list 11 and, below,
	// the children of the packages selected above.
	if (tid == 0) {
		uint32_t p = 2 * (uint32_t)nl - 2;
		for (int k = kMaxBits; k >= 2; k--) {
			const uint16_t *lp = S.leafPos[k - 2];
			uint32_t lo = 0, hi = (uint32_t)nl;
			while (lo < hi) {
				const uint32_t mid = (lo + hi) >> 1;
				if (lp[mid] < p)
					lo = mid + 1;
				else
					hi = mid;
			}
			S.lcount[k] = lo;
			p = 2 * (p - lo);
		}
		S.lcount[1] = p;
		S.maxBit = 0;
		S.maxSym = 0;
	}
	S.nb[tid] = 0;
	__syncthreads();
	if (tid < (unsigned)nl) {
		uint32_t len = 0;
		for (int k = 1; k <= kMaxBits; k++)
			len += tid < S.lcount[k];
		S.nb[S.leafSym[tid]] = (uint8_t)len;
		atomicMax(&S.maxBit, (int)len);
	}
	__syncthreads();
}

// huffman_codes assigns the canonical codes into tables (code | length<<16
// per symbol) and counts every stream's bits (S.bits); it returns the
// calling thread's symbol's length. Called by the whole CTA.
__device__ uint32_t huffman_codes(PlanShared &S, uint32_t n, uint32_t *tables)
{
	const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int maxBit = S.maxBit;
	const uint32_t l = S.nb[tid];
	if (l != 0)
		atomicMax(&S.maxSym, (int)tid);
	// Canonical code (RFC 8878 §4.2.1.3): longer codes first, then by
	// symbol; codes count up from 0. A symbol's code is the codes of every
	// longer length, scaled to its own, and then its rank among the
	// symbols of its length: those of the warps before and of the lanes
	// before in its own warp, counted by ballots. Summing over all 256
	// symbols for each took a quarter of zl_plan's instructions (Nsight
	// Compute, H200, flat fields).
	uint32_t same = 0; // the warp's lanes whose symbol has length l
	for (uint32_t j = 1; j <= kMaxBits; j++) {
		const uint32_t b = __ballot_sync(0xffffffffu, l == j);
		if (lane == j)
			S.wlen[warp][j] = __popc(b);
		same = l == j ? b : same;
	}
	__syncthreads();
	if (tid >= 1 && tid <= kMaxBits) {
		uint32_t t = 0;
		for (int w = 0; w < kWarps; w++)
			t += S.wlen[w][tid];
		S.lenCount[tid] = t;
	}
	__syncthreads();
	uint32_t code = 0;
	if (l != 0) {
		uint32_t longer = 0;
		for (int len = (int)l + 1; len <= maxBit; len++)
			longer += S.lenCount[len] << (maxBit - len);
		uint32_t rank = __popc(same & ((1u << lane) - 1));
		for (unsigned w = 0; w < warp; w++)
			rank += S.wlen[w][l];
		code = (longer >> (maxBit - l)) + rank;
	}
	tables[tid] = code | l << 16;
	// Every stream's exact bit count.
	const bool four = n > 1023;
	for (int s = 0; s < 4; s++) {
		const uint32_t h = four ? S.seg[s][tid] : (s == 0 ? S.hist[tid] : 0);
		const uint32_t b = block_sum(h * l, S.pk);
		if (tid == 0)
			S.bits[s] = b;
	}
	__syncthreads();
	return l;
}

// plan_huffman builds the Huffman code of the block's literals and leaves
// the block kTree for zl_tree, with what that needs beside the code: the
// longest code and the symbols the weights list (tree), the weights'
// histogram (wcount) and each stream's bits (stream). Called by the whole
// CTA, n the literals.
__device__ void plan_huffman(PlanShared &S, uint32_t n, Block *out, uint32_t *tables)
{
	const unsigned tid = threadIdx.x;
	huffman_lengths(S);
	const uint32_t l = huffman_codes(S, n, tables);
	const int maxBit = S.maxBit, maxSym = S.maxSym;
	if (tid < kMaxWeight)
		S.wcount[tid] = 0;
	__syncthreads();
	if (tid < (unsigned)maxSym)
		atomicAdd(&S.wcount[huff_weight(l, maxBit)], 1u);
	__syncthreads();
	if (tid < kMaxWeight)
		out->wcount[tid] = (uint8_t)S.wcount[tid]; // at most 255 symbols
	if (tid < 4)
		out->stream[tid] = S.bits[tid];
	if (tid == 0) {
		out->type = kTree;
		out->tree = (uint32_t)maxBit | (uint32_t)maxSym << 8;
	}
}

// raw_lit_header writes a Raw (typ 0) or RLE (typ 1) literals header for
// n literals and returns its size (zstdlit's appendRawLitHeader).
__device__ uint32_t raw_lit_header(uint8_t *h, uint32_t typ, uint32_t n)
{
	if (n < 32) {
		h[0] = (uint8_t)(typ | n << 3);
		return 1;
	}
	if (n < 4096) {
		put_le(h, typ | 1u << 2 | n << 4, 2);
		return 2;
	}
	put_le(h, typ | 3u << 2 | n << 4, 3);
	return 3;
}

__device__ __forceinline__ uint32_t raw_lit_header_size(uint32_t n) { return n < 32 ? 1 : n < 4096 ? 2 : 3; }

// choose_literals picks the block's literals section (RLE, Huffman when
// smaller than Raw, Raw) and keeps the block Compressed when the section
// and the sequences beat Raw by zstd's minimum gain. huffSize is the
// Huffman section's bytes, 0 where Huffman cannot code the literals; lits
// is read for an RLE section alone. One thread.
__device__ void choose_literals(uint32_t huffSize, const uint8_t *lits, uint32_t L, uint32_t n, bool rleLits,
                                Block *out)
{
	const uint32_t rawSize = raw_lit_header_size(L) + L;
	uint32_t section, mode;
	if (rleLits) {
		section = raw_lit_header_size(L) + 1;
		mode = kLitRLE;
	} else if (huffSize != 0 && huffSize < rawSize) {
		section = huffSize;
		mode = kLitHuff;
	} else {
		section = rawSize;
		mode = kLitRaw;
	}
	const uint32_t content = section + (out->nseq != 0 ? out->seq_len : 1);
	if (content >= n - ((n >> 6) + 2)) {
		out->type = kRaw;
		out->content = n;
		return;
	}
	if (mode == kLitRLE) {
		out->hdr_len = raw_lit_header(out->hdr, 1, L) + 1;
		out->hdr[out->hdr_len - 1] = lits[0];
	} else if (mode == kLitRaw) {
		out->hdr_len = raw_lit_header(out->hdr, 0, L);
	}
	out->lit_mode = mode;
	out->type = kCompressed;
	out->content = content;
}

__device__ void plan_block(const uint8_t *__restrict__ src, const uint8_t *lit, uint64_t chunk_bytes, uint32_t bpc,
                           const uint32_t *__restrict__ nonfill, Block *__restrict__ blocks,
                           uint32_t *__restrict__ tables, uint64_t bi, PlanShared &S)
{
	const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	uint64_t chunk, off;
	uint32_t n;
	block_geometry(chunk_bytes, bpc, bi, chunk, off, n);
	Block *out = blocks + bi;
	if (chunk_absent(nonfill, chunk)) {
		if (tid == 0)
			out->type = kSkip;
		return;
	}
	const uint8_t *p = src + chunk * chunk_bytes + off;
	const uint32_t nseq = out->nseq;
	// The literals: packed by zl_compact when the block keeps matches.
	const uint8_t *lits = nseq != 0 ? lit + chunk * chunk_bytes + off : p;
	const uint32_t L = nseq != 0 ? out->lit_n : n;
	if (nseq != 0) {
		// The RLE test is on the block's bytes, not its literals. Its
		// first kThreads bytes are tested first, a byte a thread: nearly
		// every block differs there, and a byte load a thread for the
		// whole block (512 each) took a fifth of zl_plan's instructions
		// and 30% of its stall samples on flat fields (Nsight Compute,
		// H100).
		const uint8_t first = p[0];
		bool diff = tid < n && p[tid] != first;
		bool rle = !__syncthreads_or(diff);
		if (rle) {
			for (uint32_t i = kThreads + tid; i < n; i += kThreads)
				diff |= p[i] != first;
			rle = !__syncthreads_or(diff);
		}
		if (rle) {
			if (tid == 0) {
				out->type = kRLE;
				out->content = 1;
				out->hdr[0] = p[0];
			}
			return;
		}
	}

	// Histograms: warps 2s and 2s+1 count halves of stream segment s.
	for (int i = tid; i < kWarps * 256; i += kThreads)
		(&S.wh[0][0])[i] = 0;
	if (tid == 0 && L > 0)
		S.first = lits[0];
	__syncthreads();
	const uint32_t segLen = (L + 3) / 4;
	{
		const uint32_t s = warp / 2;
		const uint32_t a = min(s * segLen, L), e = min((s + 1) * segLen, L);
		const uint32_t mid = a + (e - a) / 2;
		if (warp & 1)
			histogram_range(lits, mid, e, S.wh[warp], lane);
		else
			histogram_range(lits, a, mid, S.wh[warp], lane);
	}
	__syncthreads();
	uint32_t total = 0;
	for (int s = 0; s < 4; s++) {
		const uint32_t h = S.wh[2 * s][tid] + S.wh[2 * s + 1][tid];
		S.seg[s][tid] = h;
		total += h;
	}
	S.hist[tid] = total;
	__syncthreads();
	if (nseq == 0 && n >= 2 && S.hist[S.first] == n) {
		if (tid == 0) {
			out->type = kRLE;
			out->content = 1;
			out->hdr[0] = S.first;
		}
		return;
	}
	if (n < kMinHuff) {
		if (tid == 0) {
			out->type = kRaw;
			out->content = n;
		}
		return;
	}
	const bool rleLits = L > 0 && S.hist[S.first] == L;
	if (!rleLits && L >= kMinHuff) {
		plan_huffman(S, L, out, tables + bi * 256);
		return;
	}
	if (tid == 0)
		choose_literals(0, lits, L, n, rleLits, out);
}

#endif
