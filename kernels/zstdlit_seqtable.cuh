// zstdlit_seqtable.cuh: zl_seq's codes and tables: the literal and match
// length codes and their baselines, each stream's FSE table (SeqTable)
// with the state chain's shifted-state entries (build_seq_ctable), and
// one step of the chain. Included by zstdlit.cuh inside namespace zl,
// after zstdlit_fse.cuh and zstdlit_parse.cuh and before zstdlit_seq.cuh.

#ifndef ZSPOOL_ZSTDLIT_SEQTABLE_CUH
#define ZSPOOL_ZSTDLIT_SEQTABLE_CUH

// ll_code and ml_code are zstd's code of a literal length and of a match
// length (RFC 8878 §3.1.1.3.2.1.1 baselines).
__device__ __forceinline__ uint32_t ll_code(uint32_t v)
{
	if (v < 16)
		return v;
	if (v < 24)
		return 16 + (v - 16) / 2;
	if (v < 32)
		return 20 + (v - 24) / 4;
	if (v < 48)
		return 22 + (v - 32) / 8;
	if (v < 64)
		return 24;
	return (uint32_t)high_bit(v) + 19;
}

__device__ __forceinline__ uint32_t ml_code(uint32_t ml)
{
	const uint32_t b = ml - 3;
	if (b < 32)
		return b;
	if (b < 40)
		return 32 + (b - 32) / 2;
	if (b < 48)
		return 36 + (b - 40) / 4;
	if (b < 64)
		return 38 + (b - 48) / 8;
	if (b < 96)
		return 40 + (b - 64) / 16;
	if (b < 128)
		return 42;
	return (uint32_t)high_bit(b) + 36;
}

__constant__ uint32_t kLLBase[36] = {0,  1,  2,  3,  4,  5,  6,   7,   8,   9,   10,   11,   12,   13,   14,    15,    16,   18,
                                     20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};
__constant__ uint8_t kLLBits[36] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0,  0,  1,  1,
                                    1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
__constant__ uint32_t kMLBase[53] = {3,  4,  5,  6,  7,  8,  9,  10, 11, 12,  13,  14,  15,  16,   17,   18,   19,   20,
                                     21, 22, 23, 24, 25, 26, 27, 28, 29, 30,  31,  32,  33,  34,   35,   37,   39,   41,
                                     43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027, 2051, 4099, 8195, 16387, 32771, 65539};
__constant__ uint8_t kMLBits[53] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                    0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

constexpr int kLLSyms = 36, kMLSyms = 53, kOFSyms = 32;
// The codes below these have no extra bits: each is its literal length,
// or its match length less 3.
constexpr int kLLPlain = 16, kMLPlain = 32;
constexpr int kMaxSeqSyms = kMaxFSESymbols;

// One sequence code stream's coder: RLE (no state) or an FSE table, whose
// states are in the stream's part of SeqShared::next and its symbols'
// transforms in sym (build_seq_ctable).
struct SeqTable {
	// Each symbol's transform in one word: its step word (seq_step) in
	// the low half and its threshold c << mb (at most 2^10) in the high
	// half, at or above which a state puts out mb bits, below it mb - 1
	// (seq_nbits). Four bytes a symbol where FSE's deltaNbBits and the
	// entries' address took eight: 636 bytes of each warp's shared memory
	// for the three tables.
	uint32_t sym[kMaxSeqSyms];
	uint32_t log;
	uint32_t rle;
	uint32_t ncountLen; // its description's bytes, in SeqCounts::ncount until the header is written
	uint32_t mode;
};

// The state chain steps through a table of twice FSE's size at most
// (build_seq_ctable): 2^10 entries for the literal and match length codes,
// 2^9 for the offset codes (log 8 at most).
constexpr uint32_t kSeqNextLL = 1024, kSeqNextOF = 512, kSeqNextML = 1024;

// A step word (SeqTable::sym's low half) holds mb - 1 (at most 8) in its
// low 4 bits and, above them, the entry in SeqShared::next of the
// symbol's index 0 plus kSeqStepBias: index 0 lies up to 2^10 entries
// before the symbol's first entry, which may be next's first.
constexpr uint32_t kSeqStepBias = 1024;
static_assert(kSeqNextLL + kSeqNextOF + kSeqNextML + kSeqStepBias <= 1u << 12,
              "a step word's entry must fit its 12 bits");

// seq_table_log is zstdlit's tableLog (zstd's FSE_optimalTableLog).
__device__ int seq_table_log(uint32_t n, int maxSym, int maxLog)
{
	// Called with n ≥ 2 sequences and maxSym ≥ 1 (two distinct codes).
	int log = maxLog;
	const int a = high_bit(n - 1) - 2;
	if (a < log)
		log = a;
	const int b1 = high_bit(n) + 1, b2 = high_bit((uint32_t)maxSym) + 2;
	const int b = b1 < b2 ? b1 : b2;
	if (b > log)
		log = b;
	if (log > maxLog)
		log = maxLog;
	return log < 5 ? 5 : log;
}

// build_seq_ctable is fse_build_ctable for the sequence coder's chain, which
// steps from a state st on symbol s to FSE's next state
// state[(st >> nbBits) + deltaFind], nbBits being mb - 1 below the
// symbol's threshold c << mb and its maxBitsOut mb at or above it. That
// took four dependent operations before the state load (nbBits from the
// state, then the shift and the index), on the critical path of a chain
// that holds the stream's lanes for every sequence. Here a symbol of count
// c, hb = high_bit(c - 1) (0 for c = 1), owns R = 2^(hb+1) entries of E,
// indexed by st >> (mb - 1), which lies in [R, 2R): an index i below 2c is
// state i's entry (nbBits mb - 1), one at or above it state (i >> 1)'s
// (nbBits mb). A step is then one shift and one multiply-add before the
// load. As R ≤ 2c, the entries number at most twice the table's. Each
// symbol's step word carries mb - 1 and where its index 0 lies (E's first
// entry is entry eoff of SeqShared::next). spread, rank and at are
// scratch; one thread.
__device__ void build_seq_ctable(const int16_t *norm, int maxSym, int log, uint8_t *spread, int *rank, uint32_t *at,
                                 uint16_t *E, uint32_t eoff, SeqTable &T)
{
	const int size = 1 << log;
	fse_spread(norm, maxSym, log, spread);
	int off = 0;
	for (int s = 0; s <= maxSym; s++) {
		const int c = norm[s];
		if (c == 0) {
			T.sym[s] = 0;
			continue;
		}
		const int hb = c > 1 ? high_bit((uint32_t)(c - 1)) : 0;
		const uint32_t mb = (uint32_t)(log - hb);
		const int R = 2 << hb;
		// E[at + i] is the entry of index i (at may be negative: i ≥ R).
		at[s] = (uint32_t)(off - R);
		T.sym[s] = (mb - 1) | (eoff + kSeqStepBias + at[s]) << 4 | (uint32_t)c << mb << 16;
		// A state's rank among the symbol's, from c as in FSE, and R
		// above it.
		rank[s] = c | R << 16;
		off += R;
	}
	// Four symbols a load (size is a multiple of 32, spread 4-aligned):
	// loaded a byte at a time, each waited on the stores before it.
	for (int u0 = 0; u0 < size; u0 += 4) {
		const uint32_t sp = *reinterpret_cast<const uint32_t *>(spread + u0);
#pragma unroll
		for (int b = 0; b < 4; b++) {
			const uint32_t s = sp >> (8 * b) & 0xFF;
			const uint32_t w = (uint32_t)rank[s]++, r = w & 0xFFFF;
			// Below R the state has two entries, 2r and 2r + 1.
			const uint32_t two = r < w >> 16 ? 1 : 0, i = at[s] + (r << two);
			E[i] = (uint16_t)(size + u0 + b);
			E[i + two] = (uint16_t)(size + u0 + b);
		}
	}
}

// build_seq_table is seqCoder.plan and newFSETable: the mode, the table
// description and the encoding table for one code stream. One thread.
__device__ void build_seq_table(SeqTable &T, uint16_t *E, uint32_t eoff, uint8_t *ncount, uint8_t *spread, FseWork<kMaxSeqSyms> &W,
                                const uint32_t *count, int alphabet, int maxLog, uint32_t nseq)
{
	int maxSym = 0, distinct = 0, only = 0;
	for (int s = 0; s < alphabet; s++)
		if (count[s] != 0) {
			maxSym = s;
			distinct++;
			only = s;
		}
	if (distinct == 1) {
		T.rle = 1;
		T.mode = 1;
		ncount[0] = (uint8_t)only;
		T.ncountLen = 1;
		// The symbol's transform puts out no bits from state 0, which
		// seq_states records for every sequence of an RLE stream, so
		// that seq_bits needs no branch for one.
		T.sym[only] = 1u << 16;
		return;
	}
	T.rle = 0;
	T.mode = 2;
	const int log = seq_table_log(nseq, maxSym, maxLog);
	T.log = (uint32_t)log;
	fse_normalize(count, maxSym, log, W.norm, W.rem);
	T.ncountLen = fse_write_ncount(W.norm, maxSym, log, ncount);
	build_seq_ctable(W.norm, maxSym, log, spread, W.next, W.rem, E, eoff, T);
}

// lds_u16 loads the 16-bit word at shared-memory address a.
__device__ __forceinline__ uint32_t lds_u16(uint32_t a)
{
	uint16_t v;
	asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(a) : "memory");
	return v;
}

// seq_e0 is where seq_init and seq_step find a step word's entries: the
// shared-memory address of SeqShared::next less the bias.
__device__ __forceinline__ uint32_t seq_e0(const uint16_t *next)
{
	return (uint32_t)__cvta_generic_to_shared(next) - 2 * kSeqStepBias;
}

// seq_init is fse_init_state: the state a stream starts in to end on
// symbol s, FSE's state[(v >> mb) + deltaFind] for v = c << mb, the
// symbol's first state (its threshold): in build_seq_ctable's entries
// index 2c (v >> (mb - 1)), or c when c is a power of two, whose states
// all lie below v = 2^(log+1) and so index their own entries.
__device__ __forceinline__ uint32_t seq_init(const SeqTable &T, uint32_t s, uint32_t e0)
{
	if (T.rle)
		return 0;
	const uint32_t y = T.sym[s];
	const uint32_t sh = y & 15, v = y >> 16, i = v >> sh;
	return lds_u16((v >> (T.log + 1) != 0 ? i >> 1 : i) * 2 + (y & 0xFFFF) / 16 * 2 + e0);
}

// seq_step is the state after st on the symbol of step word w: a shift by
// mb - 1 and the entry's address in one multiply-add, both from w, which
// the chain loads ahead of the state. The shift is a funnel shift by w
// itself, which takes w's low 5 bits: bit 4, the entry offset's lowest, is
// always 0 (every symbol owns an even number of entries, 2R, from an even
// offset, and the streams' parts and kSeqStepBias are even), so w needs no
// mask. zl_seq is bound by its issue slots more than by the chain's
// latency (Nsight Compute, dim frames: issue slots 64% busy): the mask's
// instruction gone, and eight steps a turn of seq_states' loop instead of
// four, zl_seq ran 2 to 4% faster (H100, two rounds side by side), where a
// step with one dependent operation fewer but one more instruction had run
// 0.6% slower.
__device__ __forceinline__ uint32_t seq_step(uint32_t st, uint32_t w, uint32_t e0)
{
	return lds_u16(__funnelshift_r(st, 0, w) * 2 + ((w >> 4) * 2 + e0));
}

// seq_nbits is the number of bits a stream in state st puts out for the
// symbol of transform y (SeqTable::sym): FSE's nbBitsOut, mb - 1 below
// the symbol's threshold and mb at or above it.
__device__ __forceinline__ uint32_t seq_nbits(uint32_t st, uint32_t y)
{
	return (y & 15) + (st >= y >> 16 ? 1 : 0);
}

#endif
