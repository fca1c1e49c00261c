// zstdlit_encode.cuh: zl_encode's device code (headers, Raw and RLE blocks,
// the Huffman bitstreams). Included by zstdlit.cuh inside namespace zl.

#ifndef ZSPOOL_ZSTDLIT_ENCODE_CUH
#define ZSPOOL_ZSTDLIT_ENCODE_CUH

// ---------------------------------------------------------------------------
// zl_encode

// EncodeShared: the stream's bits are packed here, then copied out. A
// stream holds at most 32768 literals of at most 11 bits.
constexpr uint32_t kStageWords = (32768u * kMaxBits + 1 + 31) / 32 + 2;
struct EncodeShared {
	uint32_t stage[kStageWords];
	uint32_t tab[256];
	uint32_t scan[kWarps][8];
	uint32_t roundTotal[8];
};

constexpr uint32_t kPiece = 16;                 // literals a thread takes per round
constexpr uint32_t kRound = kPiece * kThreads; // literals per round
constexpr int kRounds = 8;                      // 8 × 4096 = 32768

// load_piece is the 16 bytes at p, of which avail are the stream's
// (those past it read as 0); mis is p's distance past a 16-byte
// boundary, the same for every piece of a stream. Three streams of four
// start off a boundary (a stream starts a quarter of the block's literals
// in), and gathering their pieces a byte at a time took a quarter of
// zl_encode's stall samples on flat fields (Nsight Compute, H200), so a
// piece with 32 of its stream's bytes from p is shifted out of the two
// aligned 16-byte loads around it instead.
__device__ __forceinline__ uint4 load_piece(const uint8_t *p, uint32_t avail, uint32_t mis)
{
	if (mis == 0 && avail >= 16)
		return __ldg(reinterpret_cast<const uint4 *>(p));
	if (avail >= 32) {
		// a starts at the boundary at or below p (inside the buffer,
		// whose start is aligned), b ends before p + 32.
		const uint4 a = __ldg(reinterpret_cast<const uint4 *>(p - mis));
		const uint4 b = __ldg(reinterpret_cast<const uint4 *>(p - mis + 16));
		// Words q = mis / 4 on, by q's two bits, then the bytes between.
		const bool w2 = (mis & 8) != 0, w1 = (mis & 4) != 0;
		const uint32_t f0 = w2 ? a.z : a.x, f1 = w2 ? a.w : a.y, f2 = w2 ? b.x : a.z, f3 = w2 ? b.y : a.w,
		               f4 = w2 ? b.z : b.x, f5 = w2 ? b.w : b.y;
		const uint32_t e0 = w1 ? f1 : f0, e1 = w1 ? f2 : f1, e2 = w1 ? f3 : f2, e3 = w1 ? f4 : f3, e4 = w1 ? f5 : f4;
		const uint32_t r = (mis & 3) * 8;
		return make_uint4(__funnelshift_r(e0, e1, r), __funnelshift_r(e1, e2, r), __funnelshift_r(e2, e3, r),
		                  __funnelshift_r(e3, e4, r));
	}
	uint8_t b[16];
#pragma unroll
	for (int i = 0; i < 16; i++)
		b[i] = (uint32_t)i < avail ? p[i] : 0;
	uint4 v;
	memcpy(&v, b, 16);
	return v;
}

__device__ __forceinline__ uint32_t piece_byte(const uint4 &v, int i)
{
	const uint32_t w = i < 4 ? v.x : i < 8 ? v.y : i < 12 ? v.z : v.w;
	return (w >> (8 * (i & 3))) & 0xff;
}

// copy_bytes copies s[a, e) to d[a, e), the CTA's threads each taking
// every kThreads-th byte, kCopyAhead of them at a time so that a thread's
// loads are in flight together: one at a time, each store waited on its
// load, and the Raw blocks' copy alone took 21% of zl_encode's stall
// samples on bright cells (H100, 2026-11-26). s is read-only here.
constexpr uint32_t kCopyAhead = 8;
__device__ __forceinline__ void copy_bytes(uint8_t *__restrict__ d, const uint8_t *__restrict__ s, uint32_t a,
                                           uint32_t e)
{
	uint32_t i = a + threadIdx.x;
	for (; i + (kCopyAhead - 1) * kThreads < e; i += kCopyAhead * kThreads) {
		uint8_t v[kCopyAhead];
#pragma unroll
		for (uint32_t u = 0; u < kCopyAhead; u++)
			v[u] = __ldg(s + i + u * kThreads);
#pragma unroll
		for (uint32_t u = 0; u < kCopyAhead; u++)
			d[i + u * kThreads] = v[u];
	}
	for (; i < e; i += kThreads)
		d[i] = __ldg(s + i);
}

// append_code adds code e (the code in the low 16 bits, its length
// above) to a thread's accumulator of nacc bits.
__device__ __forceinline__ void append_code(uint32_t e, uint64_t &acc, uint32_t &nacc)
{
	acc |= (uint64_t)(e & 0xffff) << nacc;
	nacc += e >> 16;
}

// pack_code appends code e and ORs each full word into the stage at wi:
// a stream's last, partial piece (whole ones take pack_pair).
__device__ __forceinline__ void pack_code(uint32_t e, uint64_t &acc, uint32_t &nacc, uint32_t &wi, uint32_t *stage)
{
	append_code(e, acc, nacc);
	if (nacc >= 32) {
		atomicOr(&stage[wi], (uint32_t)acc);
		wi++;
		acc >>= 32;
		nacc -= 32;
	}
}

// pack_pair appends codes e0 and then e1 to a
// thread's accumulator of nacc bits (at most 31, then at most 53) and ORs
// its low word into the stage at wi whether or not it is full, moving on
// a word when it is: ORing a word's bits again changes nothing. pack_code's
// test, a literal at a time, was a branch that split the warp at every
// literal (a BSSY, a branch and a BSYNC each: 128 of zl_encode's 641
// branches; ptxas made a predicated atomic one too). This takes an atomic
// every two literals, where that took one every full word, and no branch:
// the stages after the packing 2.27 -> 2.11 ms a GiB on bright cells, 2.60
// -> 2.46 on flat fields, 2.50 -> 2.33 on 8-bit frames, 2.60 -> 2.45 on
// saturated ones, 1.26 -> 1.19 on dim frames (H200, one call, the same
// bytes).
__device__ __forceinline__ void pack_pair(uint32_t e0, uint32_t e1, uint64_t &acc, uint32_t &nacc, uint32_t &wi,
                                          uint32_t *stage)
{
	append_code(e0, acc, nacc);
	append_code(e1, acc, nacc);
	atomicOr(&stage[wi], (uint32_t)acc);
	const bool full = nacc >= 32;
	wi += full ? 1 : 0;
	acc = full ? acc >> 32 : acc;
	nacc -= full ? 32 : 0;
}

// take_first returns a[0] and moves a's other entries down one; the last
// keeps its value. With a's size fixed and the loop unrolled, each entry
// stays in a register of its own (encode_stream's rounds).
template <typename T, int N> __device__ __forceinline__ T take_first(T (&a)[N])
{
	const T x = a[0];
#pragma unroll
	for (int k = 0; k < N - 1; k++)
		a[k] = a[k + 1];
	return x;
}

// encode_stream writes the Huffman bitstream of lits[0..m) (m ≤ 32768) at
// dst: the last literal first, so the decoder reads the first one first,
// then the closing 1 bit. want is the size zl_plan computed.
__device__ void encode_stream(const uint8_t *__restrict__ lits, uint32_t m, const uint32_t *__restrict__ table,
                              uint8_t *__restrict__ dst, uint32_t want, uint32_t *err, EncodeShared &S)
{
	const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	S.tab[tid] = table[tid];
	const uint32_t words = (want + 3) / 4 + 1;
	for (uint32_t i = tid; i < words && i < kStageWords; i += kThreads)
		S.stage[i] = 0;
	const uint32_t mis = (uint32_t)((uintptr_t)lits & 15);
	uint4 v[kRounds];
	const uint32_t rounds = (m + kRound - 1) / kRound;
#pragma unroll
	for (int r = 0; r < kRounds; r++) {
		const uint32_t at = (uint32_t)r * kRound + tid * kPiece;
		v[r] = make_uint4(0, 0, 0, 0);
		if ((uint32_t)r < rounds && at < m)
			v[r] = load_piece(lits + at, m - at, mis);
	}
	__syncthreads();
	// Bits per piece, then each piece's start: the bits of every later
	// literal (later pieces of the round, then later rounds).
	//
	// This count and the packing below take the rounds in a loop, not
	// unrolled: each turn takes round 0's piece and moves the others down
	// (the count puts it back at the top, so that v is whole again for
	// the packing), so that every round's piece still sits in registers
	// of its own. Unrolled eight times, zl_encode came to 9,185
	// instructions (147 KB, more than an SM's instruction cache), and its
	// warps waited with no instruction in 33% of the stall samples on
	// bright cells (Nsight Compute, H200); now 3,872 instructions, 5%.
	// With pack_pair, the stages after the packing took 2.11 -> 1.74 ms a
	// GiB on bright cells, 2.46 -> 2.10 on flat fields, 2.33 -> 1.91 on
	// 8-bit frames and 2.45 -> 2.06 on saturated ones (against
	// pack_pair's build and the one before, each in one call, H200).
	uint32_t bits[kRounds] = {};
#pragma unroll 1
	for (int r = 0; r < kRounds; r++) {
		const uint4 cur = take_first(v);
		v[kRounds - 1] = cur;
		take_first(bits);
		const uint32_t at = (uint32_t)r * kRound + tid * kPiece;
		uint32_t sum = 0;
		if ((uint32_t)r < rounds && at < m) {
			const uint32_t cnt = min(kPiece, m - at);
			if (cnt == kPiece) {
#pragma unroll
				for (uint32_t i = 0; i < kPiece; i++)
					sum += S.tab[piece_byte(cur, i)] >> 16;
			} else {
				for (uint32_t i = 0; i < cnt; i++)
					sum += S.tab[piece_byte(cur, i)] >> 16;
			}
		}
		bits[kRounds - 1] = sum;
	}
	// Suffix sums within each warp (lanes above), per round.
	uint32_t after[kRounds];
#pragma unroll
	for (int r = 0; r < kRounds; r++) {
		uint32_t x = bits[r];
		for (int d = 1; d < 32; d <<= 1) {
			const uint32_t y = __shfl_down_sync(0xffffffffu, x, d);
			if (lane + d < 32)
				x += y;
		}
		after[r] = x - bits[r]; // later lanes of this warp
		if (lane == 0)
			S.scan[warp][r] = x;
	}
	__syncthreads();
	if (tid < kRounds) {
		uint32_t t = 0;
		for (int w = 0; w < kWarps; w++)
			t += S.scan[w][tid];
		S.roundTotal[tid] = t;
	}
	__syncthreads();
	uint32_t later = 0; // bits of all rounds after r, walking r down
	uint32_t start[kRounds];
#pragma unroll
	for (int r = kRounds - 1; r >= 0; r--) {
		uint32_t w = 0;
		for (int x = warp + 1; x < kWarps; x++)
			w += S.scan[x][r];
		start[r] = later + w + after[r];
		later += S.roundTotal[r];
	}
	const uint32_t totalBits = later;
	// Pack: each piece from its last literal down, words ORed into place
	// (a piece shares its first and last word with its neighbours). A
	// whole piece, all but the stream's last, is unrolled so that each
	// literal's byte is taken from a fixed place in the piece's registers:
	// picked by a running index, it cost three times the instructions of
	// the rest of the step (Nsight Compute, H100, flat fields). The rounds
	// go in a loop, as the count's.
#pragma unroll 1
	for (int r = 0; r < kRounds; r++) {
		const uint4 cur = take_first(v);
		const uint32_t st = take_first(start);
		const uint32_t at = (uint32_t)r * kRound + tid * kPiece;
		if ((uint32_t)r >= rounds || at >= m)
			continue;
		const int cnt = (int)min(kPiece, m - at);
		uint32_t wi = st >> 5;
		uint32_t nacc = st & 31;
		uint64_t acc = 0;
		if (cnt == (int)kPiece) {
#pragma unroll
			for (int i = kPiece - 1; i >= 0; i -= 2)
				pack_pair(S.tab[piece_byte(cur, i)], S.tab[piece_byte(cur, i - 1)], acc, nacc, wi, S.stage);
		} else {
			for (int i = cnt - 1; i >= 0; i--)
				pack_code(S.tab[piece_byte(cur, i)], acc, nacc, wi, S.stage);
		}
		if (nacc > 0)
			atomicOr(&S.stage[wi], (uint32_t)acc);
	}
	__syncthreads();
	const uint32_t bytes = (totalBits + 8) / 8;
	if (bytes != want) {
		if (tid == 0)
			atomicOr(err, kErrStreamSize);
		return;
	}
	if (tid == 0)
		atomicOr(&S.stage[totalBits >> 5], 1u << (totalBits & 31));
	__syncthreads();
	copy_staged<kThreads>(dst, S.stage, bytes, threadIdx.x);
}

__device__ void encode_block(const uint8_t *__restrict__ src, const uint8_t *__restrict__ lit, uint64_t chunk_bytes,
                             uint32_t bpc, const Block *__restrict__ blocks, const uint32_t *__restrict__ tables,
                             const uint64_t *__restrict__ key_of, const uint64_t *__restrict__ offsets,
                             uint8_t *__restrict__ out, uint32_t *err, uint64_t bi, uint32_t q, bool checksum,
                             EncodeShared &S)
{
	const unsigned tid = threadIdx.x;
	const Block *blk = blocks + bi;
	const uint32_t type = blk->type;
	if (type == kSkip)
		return;
	uint64_t chunk, off;
	uint32_t n;
	block_geometry(chunk_bytes, bpc, bi, chunk, off, n);
	const uint32_t b = (uint32_t)(off / kBlock); // the block's index in its frame
	const uint8_t *p = src + chunk * chunk_bytes + off;
	uint8_t *frame = out + offsets[key_of != nullptr ? key_of[chunk] : chunk];
	uint8_t *dst = frame + blk->out_off;
	if (q == 0 && tid == 0) {
		if (b == 0)
			write_frame_header(frame, chunk_bytes, checksum);
		const uint32_t size = type == kCompressed ? blk->content : n;
		const uint32_t h = size << 3 | type << 1 | (b == bpc - 1 ? 1u : 0u);
		put_le(dst, h, 3);
	}
	if (type == kRLE) {
		if (q == 0 && tid == 0)
			dst[3] = blk->hdr[0];
		return;
	}
	if (type == kRaw) {
		const uint32_t qs = (n + 3) / 4;
		const uint32_t a = min(q * qs, n), e = min((q + 1) * qs, n);
		copy_bytes(dst + 3, p, a, e);
		return;
	}
	if (type != kCompressed) {
		if (tid == 0)
			atomicOr(err, kErrState);
		return;
	}
	const uint32_t nseq = blk->nseq, L = blk->lit_n;
	const uint8_t *lits = nseq != 0 ? lit + chunk * chunk_bytes + off : p;
	const uint32_t hl = blk->hdr_len;
	if (q == 0) {
		for (uint32_t i = tid; i < hl; i += kThreads)
			dst[3 + i] = blk->hdr[i];
		// The sequences section closes the block.
		uint8_t *sec = dst + 3 + blk->content - (nseq != 0 ? blk->seq_len : 1);
		if (nseq == 0) {
			if (tid == 0)
				sec[0] = 0;
		} else {
			copy_bytes(sec, lits + L, 0, blk->seq_len);
		}
	}
	const uint32_t mode = blk->lit_mode;
	if (mode == kLitRLE)
		return;
	if (mode == kLitRaw) {
		const uint32_t qs = (L + 3) / 4;
		const uint32_t a = min(q * qs, L), e = min((q + 1) * qs, L);
		copy_bytes(dst + 3 + hl, lits, a, e);
		return;
	}
	const uint32_t streams = blk->streams;
	if (q >= streams)
		return;
	uint32_t at = 3 + hl;
	for (uint32_t s = 0; s < q; s++)
		at += blk->stream[s];
	uint32_t a = 0, e = L;
	if (streams == 4) {
		const uint32_t seg = (L + 3) / 4;
		a = min(q * seg, L);
		e = min((q + 1) * seg, L);
	}
	encode_stream(lits + a, e - a, tables + bi * 256, dst + at, blk->stream[q], err, S);
}

// ---------------------------------------------------------------------------
// XXH64 (the frame's optional Content_Checksum), seed 0. Its four lanes are
// independent chains over the 32-byte stripes, so four threads (consecutive
// lanes of a warp) take one lane each and meet for the merge and the tail.

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full, kP3 = 0x165667B19E3779F9ull,
                   kP4 = 0x85EBCA77C2B2AE63ull, kP5 = 0x27D4EB2F165667C5ull;

// kAhead is the stripes a hashing thread loads ahead. zl_xxh runs beside
// the match kernels (litHasher), and its registers are theirs: at 32 it
// took 104, at 16 66, and the kernels with the checksum ran 1.6 to 3.2%
// faster (H200, one round side by side, the same bytes: 62.15 -> 63.17
// GB/s on dim frames, 62.07 -> 63.79 bright cells, 82.01 -> 84.07 flat
// fields, 69.00 -> 70.46 8-bit frames, 82.39 -> 85.01 saturated ones).
// At 8 (40 registers) the hash outlasted the parse, and the sequences
// waited for it: 50 to 61 GB/s.
constexpr int kAhead = 16;

__device__ __forceinline__ uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
__device__ __forceinline__ uint64_t xxh_round(uint64_t acc, uint64_t in) { return rotl64(acc + in * kP2, 31) * kP1; }
__device__ __forceinline__ uint64_t xxh_merge(uint64_t acc, uint64_t v) { return (acc ^ xxh_round(0, v)) * kP1 + kP4; }

__device__ __forceinline__ uint64_t load64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

// xxh64_group: every thread of a group of four calls it with its lane l
// (0..3) and the same p and n; all four get the hash. Inactive groups pass
// active false (and still take part in the shuffles).
__device__ uint64_t xxh64_group(const uint8_t *p, uint64_t n, uint32_t l, bool active)
{
	const uint64_t stripes = active ? n / 32 : 0;
	uint64_t v = l == 0 ? kP1 + kP2 : l == 1 ? kP2 : l == 2 ? 0 : 0 - kP1;
	const bool aligned = ((uintptr_t)p & 7) == 0;
	const uint64_t *w = reinterpret_cast<const uint64_t *>(p);
	uint64_t s = 0;
	if (aligned && stripes >= kAhead) {
		// Few threads hash a batch (four a chunk), so each keeps kAhead
		// loads in flight while its chain works through the last kAhead:
		// without that the loop waits on memory, not on the multiplies.
		uint64_t cur[kAhead];
#pragma unroll
		for (int j = 0; j < kAhead; j++)
			cur[j] = __ldg(w + 4 * j + l);
		for (; s + 2 * kAhead <= stripes; s += kAhead) {
			uint64_t nxt[kAhead];
#pragma unroll
			for (int j = 0; j < kAhead; j++)
				nxt[j] = __ldg(w + 4 * (s + kAhead + j) + l);
#pragma unroll
			for (int j = 0; j < kAhead; j++)
				v = xxh_round(v, cur[j]);
#pragma unroll
			for (int j = 0; j < kAhead; j++)
				cur[j] = nxt[j];
		}
#pragma unroll
		for (int j = 0; j < kAhead; j++)
			v = xxh_round(v, cur[j]);
		s += kAhead;
	}
	for (; s < stripes; s++)
		v = xxh_round(v, load64(p + 32 * s + 8 * l));
	const unsigned mask = 0xffffffffu; // every thread of the warp calls this
	const unsigned base = threadIdx.x & ~3u & 31u;
	const uint64_t v1 = __shfl_sync(mask, v, base), v2 = __shfl_sync(mask, v, base + 1),
	               v3 = __shfl_sync(mask, v, base + 2), v4 = __shfl_sync(mask, v, base + 3);
	if (!active)
		return 0;
	uint64_t h;
	if (n >= 32) {
		h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
		h = xxh_merge(h, v1);
		h = xxh_merge(h, v2);
		h = xxh_merge(h, v3);
		h = xxh_merge(h, v4);
	} else {
		h = kP5;
	}
	h += n;
	const uint8_t *q = p + stripes * 32;
	uint64_t left = n - stripes * 32;
	for (; left >= 8; left -= 8, q += 8) {
		h ^= xxh_round(0, load64(q));
		h = rotl64(h, 27) * kP1 + kP4;
	}
	if (left >= 4) {
		const uint64_t k = (uint64_t)q[0] | (uint64_t)q[1] << 8 | (uint64_t)q[2] << 16 | (uint64_t)q[3] << 24;
		h ^= k * kP1;
		h = rotl64(h, 23) * kP2 + kP3;
		left -= 4;
		q += 4;
	}
	for (; left > 0; left--, q++) {
		h ^= (uint64_t)*q * kP5;
		h = rotl64(h, 11) * kP1;
	}
	h ^= h >> 33;
	h *= kP2;
	h ^= h >> 29;
	h *= kP3;
	h ^= h >> 32;
	return h;
}

#endif
