// zstdlit_fse.cuh: FSE (RFC 8878 §4.1) as both zl_plan's Huffman weights
// and zl_seq's sequence codes use it: the backward bitstream writer, table
// normalization and description, the symbols' spread and the encoding
// table (zstdlit/fse.go, zstdlit/seq.go). Included by zstdlit.cuh inside
// namespace zl, before zstdlit_plan.cuh.

#ifndef ZSPOOL_ZSTDLIT_FSE_CUH
#define ZSPOOL_ZSTDLIT_FSE_CUH

// BitOut is a backward bitstream writer (zstd's bit order) that writes
// nothing at or past limit and says so in over.
struct BitOut {
	uint8_t *out;
	uint32_t len, limit;
	uint64_t acc;
	uint32_t nbits;
	bool over;
	__device__ void add(uint64_t v, uint32_t n)
	{
		acc |= (v & ((1ull << n) - 1)) << nbits;
		nbits += n;
		if (nbits >= 32) {
			if (len + 4 <= limit)
				put_le(out + len, (uint32_t)acc, 4);
			else
				over = true;
			len += 4;
			acc >>= 32;
			nbits -= 32;
		}
	}
	__device__ void put_byte(uint8_t b)
	{
		if (len < limit)
			out[len] = b;
		else
			over = true;
		len++;
	}
	// close adds the end mark and the last partial bytes.
	__device__ void close()
	{
		add(1, 1);
		while (nbits > 0) {
			put_byte((uint8_t)acc);
			acc >>= 8;
			nbits -= nbits < 8 ? nbits : 8;
		}
	}
};

__device__ __forceinline__ int high_bit(uint32_t v) { return 31 - __clz(v); }

// kMaxFSESymbols is the largest alphabet FSE codes here (match-length
// codes); Huffman weights use the first kMaxWeight (zstdlit_plan.cuh).
constexpr int kMaxFSESymbols = 53;

// fse_normalize spreads 1<<log over the present symbols 0..maxSym: one
// each, the rest in proportion to the counts by largest remainder (ties to
// the smaller symbol). zstdlit's normalize. norm and rem (scratch) hold
// maxSym+1 entries; the callers keep them in shared memory, as an array a
// thread indexes at run time would live in its local memory.
__device__ void fse_normalize(const uint32_t *count, int maxSym, int log, int16_t *norm, uint32_t *rem)
{
	// 32-bit arithmetic is exact here: a count is at most a block's 2^17
	// bytes and the rest at most 2^9, so their product stays below 2^26
	// (a 64-bit division costs the GPU a long software routine).
	uint32_t total = 0;
	int present = 0;
	for (int s = 0; s <= maxSym; s++) {
		norm[s] = 0;
		rem[s] = 0;
		if (count[s] != 0) {
			norm[s] = 1;
			present++;
			total += count[s];
		}
	}
	const uint32_t rest = (uint32_t)((1 << log) - present);
	uint32_t given = 0;
	for (int s = 0; s <= maxSym; s++)
		if (count[s] != 0) {
			const uint32_t q = count[s] * rest;
			norm[s] += (int16_t)(q / total);
			given += q / total;
			rem[s] = q % total;
		}
	for (; given < rest; given++) {
		int b = -1;
		for (int s = 0; s <= maxSym; s++)
			if (count[s] != 0 && (b < 0 || rem[s] > rem[b]))
				b = s;
		norm[b]++;
		rem[b] = 0;
	}
}

// fse_write_ncount writes the FSE table description (RFC 8878 §4.1.1) of
// norm into out and returns its length. zstdlit's appendNCount.
__device__ uint32_t fse_write_ncount(const int16_t *norm, int maxSym, int log, uint8_t *out)
{
	uint32_t len = 0;
	uint64_t acc = 0;
	uint32_t nb = 0;
	auto put = [&](uint64_t v, uint32_t n) {
		acc |= v << nb;
		nb += n;
		while (nb >= 8) {
			out[len++] = (uint8_t)acc;
			acc >>= 8;
			nb -= 8;
		}
	};
	put((uint64_t)(log - 5), 4);
	int remaining = (1 << log) + 1;
	int threshold = 1 << log;
	uint32_t nbBits = (uint32_t)log + 1;
	bool prev0 = false;
	for (int s = 0; s <= maxSym && remaining > 1;) {
		if (prev0) {
			int start = s;
			while (s <= maxSym && norm[s] == 0)
				s++;
			while (s >= start + 3) {
				put(3, 2);
				start += 3;
			}
			put((uint64_t)(s - start), 2);
		}
		const int c = norm[s];
		s++;
		const int mx = 2 * threshold - 1 - remaining;
		remaining -= c;
		int v = c + 1;
		if (v >= threshold)
			v += mx;
		if (v < mx)
			put((uint64_t)v, nbBits - 1);
		else
			put((uint64_t)v, nbBits);
		prev0 = v == 1;
		while (remaining < threshold) {
			nbBits--;
			threshold >>= 1;
		}
	}
	if (nb > 0)
		out[len++] = (uint8_t)acc;
	return len;
}

// fse_spread lays out norm's symbols (0..maxSym) over the 1 << log
// entries of spread as the decoder's table does: FSE's step of 5/8 of the
// table plus 3.
__device__ __forceinline__ void fse_spread(const int16_t *norm, int maxSym, int log, uint8_t *spread)
{
	const int size = 1 << log;
	int pos = 0;
	const int step = (size >> 1) + (size >> 3) + 3, mask = size - 1;
	for (int s = 0; s <= maxSym; s++)
		for (int i = 0; i < norm[s]; i++) {
			spread[pos] = (uint8_t)s;
			pos = (pos + step) & mask;
		}
}

// fse_build_ctable builds the FSE encoding table for norm (symbols
// 0..maxSym, table log log), zstd's FSE_buildCTable: state holds, symbol by
// symbol, the states the decoder's spread gives it; deltaNbBits and
// deltaFind are each symbol's transform. spread (1 << log entries) and
// next (maxSym+1) are scratch.
__device__ void fse_build_ctable(const int16_t *norm, int maxSym, int log, uint8_t *spread, int *next, uint16_t *state,
                                 uint32_t *deltaNbBits, int32_t *deltaFind)
{
	const int size = 1 << log;
	fse_spread(norm, maxSym, log, spread);
	int cum = 0;
	for (int s = 0; s <= maxSym; s++) {
		next[s] = cum;
		cum += norm[s];
	}
	for (int s = 0; s <= maxSym; s++) {
		const int c = norm[s];
		uint32_t maxBitsOut = (uint32_t)log;
		if (c > 1)
			maxBitsOut = (uint32_t)log - (uint32_t)high_bit((uint32_t)(c - 1));
		deltaNbBits[s] = c == 0 ? 0 : (maxBitsOut << 16) - ((uint32_t)c << maxBitsOut);
		deltaFind[s] = next[s] - c;
	}
	for (int u = 0; u < size; u++) {
		const int s = spread[u];
		state[next[s]++] = (uint16_t)(size + u);
	}
}

// fse_init_state is the state an FSE stream starts in to end on symbol s
// (the last symbol, which the encoder meets first).
__device__ __forceinline__ uint32_t fse_init_state(const uint16_t *state, const uint32_t *deltaNbBits,
                                                   const int32_t *deltaFind, int s)
{
	const uint32_t nbOut = (deltaNbBits[s] + (1u << 15)) >> 16;
	const uint32_t v = (nbOut << 16) - deltaNbBits[s];
	return state[(int32_t)(v >> nbOut) + deltaFind[s]];
}

// FseWork is an FSE table's scratch while it is built: the normalized
// counts of up to N symbols, fse_normalize's largest remainders and
// fse_build_ctable's next states (for zl_seq's build_seq_ctable, once the
// remainders are spent, each symbol's entry offset in rem and its states'
// rank in next). Its users keep it in shared memory: in
// a thread's local memory, where arrays indexed at run time go, each of
// its loads waited on the cache.
template <int N> struct FseWork {
	int16_t norm[N]; // at most 2^9
	uint32_t rem[N];
	int next[N];
};

#endif
