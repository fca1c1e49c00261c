/*
 * layout.cuh — the index math of zspool's GPU engine, shared by the CUDA
 * kernels (zspool.cu) and a host-side check that runs the same functions
 * on the CPU against the Go reference (kernels/internal/hostsim).
 *
 * Plain C99 on purpose: cgo compiles it for the host check, nvcc for the
 * device. Nothing here may depend on CUDA.
 *
 * Dims are stored REVERSED: j = 0 is the fastest dim of the raw layout and
 * is measured in BYTES (size × element size), so element size never appears
 * in the math; j = rank−1 is dim 0, the append dim, holding the batch's
 * frames. A "row" is one run of the fastest dim inside one chunk; the
 * output of the scatter is chunk after chunk (C order over the chunk grid),
 * each chunk full size with its rows in C order, padding = 0.
 */
#ifndef ZSPOOL_LAYOUT_CUH
#define ZSPOOL_LAYOUT_CUH

#include <stdint.h>

#ifdef __CUDACC__
#define ZS_HD __host__ __device__ __forceinline__
#else
#define ZS_HD static inline
#endif

#define ZS_MAX_RANK 8

/* Division by an invariant 32-bit divisor d ≥ 1 as a multiply and a shift
 * (Granlund–Montgomery, round-up variant): q = (umulhi(n, mul) + n) >> shift
 * with the sum taken in 64 bits; exact for every n < 2^32. The host fills
 * mul and shift (kernels.newDiv32). */
typedef struct {
	uint32_t mul;
	uint32_t shift;
} zs_div32;

/* The kernels' parameters, in device memory (gorgonia.org/cu passes only
 * 8-byte kernel arguments, so the kernels get a pointer to this). The Go
 * side serialises it field by field in this order, little endian
 * (kernels.params.encode); every field is naturally aligned, so there is no
 * padding. Keep the two in step: the host check compares sizes. */
typedef struct {
	uint32_t rank;         /* R, 1…8 */
	uint32_t vec;          /* V: bytes per thread access of the scatter, 1…16 */
	uint64_t total_vecs;   /* output size / V */
	uint64_t row_vecs;     /* L = chunk[0] / V */
	uint64_t rows_per_chunk; /* Π_{j≥1} chunk[j] */
	uint64_t chunk_bytes;  /* Π chunk[j], chunk[0] in bytes */
	uint64_t n_chunks;     /* Π grid[j] */
	uint64_t in_bytes;     /* size of the raw batch */
	uint64_t shape[ZS_MAX_RANK];  /* S_j; S_0 in bytes */
	uint64_t chunk[ZS_MAX_RANK];  /* N_j; N_0 in bytes */
	uint64_t grid[ZS_MAX_RANK];   /* T_j = ceil(S_j / N_j) */
	uint64_t stride[ZS_MAX_RANK]; /* raw stride of dim j in bytes; stride[0] = 1 */
	uint64_t shard[ZS_MAX_RANK];  /* P_j, chunks per shard */
	uint64_t shards[ZS_MAX_RANK]; /* Q_j = ceil(T_j / P_j) */
	uint64_t inner_slots;  /* Π_{j<R−1} P_j: index slots of one chunk row of a shard */
	uint64_t epochs;       /* grid[R−1]: chunk rows (epochs) in the batch */
	uint64_t keys;         /* inner shards × epochs × inner_slots */
	uint64_t gather_vec;   /* bytes per thread access of the gather, divides chunk_bytes */
	zs_div32 d_row;        /* ÷ row_vecs */
	zs_div32 d_rpc;        /* ÷ rows_per_chunk */
	zs_div32 d_chunk[ZS_MAX_RANK]; /* ÷ N_j, j ≥ 1 */
	zs_div32 d_grid[ZS_MAX_RANK];  /* ÷ T_j */
} zs_params;

ZS_HD uint32_t zs_umulhi(uint32_t a, uint32_t b)
{
#ifdef __CUDA_ARCH__
	return __umulhi(a, b);
#else
	return (uint32_t)(((uint64_t)a * b) >> 32);
#endif
}

ZS_HD uint32_t zs_div(zs_div32 d, uint32_t n)
{
	return (uint32_t)(((uint64_t)zs_umulhi(n, d.mul) + n) >> d.shift);
}

/* zs_locate32 finds where output vector v of the scatter comes from, with
 * 32-bit arithmetic (the host picks it when the batch and its chunk layout
 * are both under 4 GiB). It returns how many of the vector's V bytes lie
 * inside the array (0: all padding, V: all data, between: the vector
 * straddles the array's fastest-dim edge), sets *src to the raw byte offset
 * of its first byte and *chunk to the chunk it belongs to. */
ZS_HD uint32_t zs_locate32(const zs_params *p, uint32_t v, uint32_t *src, uint32_t *chunk)
{
	const uint32_t V = p->vec;
	uint32_t row = zs_div(p->d_row, v);
	uint32_t col = v - row * (uint32_t)p->row_vecs;
	uint32_t k = zs_div(p->d_rpc, row);
	uint32_t rr = row - k * (uint32_t)p->rows_per_chunk;
	*chunk = k;
	/* j = 0: the fastest dim, in bytes. */
	uint32_t q = zs_div(p->d_grid[0], k);
	uint32_t x = (k - q * (uint32_t)p->grid[0]) * (uint32_t)p->chunk[0] + col * V;
	k = q;
	const uint32_t s0 = (uint32_t)p->shape[0];
	if (x >= s0)
		return 0;
	uint32_t valid = s0 - x < V ? s0 - x : V;
	uint32_t off = x;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
	for (int j = 1; j < ZS_MAX_RANK; j++) {
		if (j < (int)p->rank) {
			uint32_t qc = zs_div(p->d_grid[j], k);
			uint32_t c = k - qc * (uint32_t)p->grid[j];
			k = qc;
			uint32_t qr = zs_div(p->d_chunk[j], rr);
			uint32_t r = rr - qr * (uint32_t)p->chunk[j];
			rr = qr;
			uint32_t xj = c * (uint32_t)p->chunk[j] + r;
			if (xj >= (uint32_t)p->shape[j])
				return 0;
			off += xj * (uint32_t)p->stride[j];
		}
	}
	*src = off;
	return valid;
}

/* zs_locate64 is zs_locate32 for batches of 4 GiB and more. */
ZS_HD uint32_t zs_locate64(const zs_params *p, uint64_t v, uint64_t *src, uint64_t *chunk)
{
	const uint64_t V = p->vec;
	uint64_t row = v / p->row_vecs;
	uint64_t col = v - row * p->row_vecs;
	uint64_t k = row / p->rows_per_chunk;
	uint64_t rr = row - k * p->rows_per_chunk;
	*chunk = k;
	uint64_t x = (k % p->grid[0]) * p->chunk[0] + col * V;
	k /= p->grid[0];
	if (x >= p->shape[0])
		return 0;
	uint32_t valid = (uint32_t)(p->shape[0] - x < V ? p->shape[0] - x : V);
	uint64_t off = x;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
	for (int j = 1; j < ZS_MAX_RANK; j++) {
		if (j < (int)p->rank) {
			uint64_t c = k % p->grid[j];
			k /= p->grid[j];
			uint64_t r = rr % p->chunk[j];
			rr /= p->chunk[j];
			uint64_t xj = c * p->chunk[j] + r;
			if (xj >= p->shape[j])
				return 0;
			off += xj * p->stride[j];
		}
	}
	*src = off;
	return valid;
}

/* zs_chunk_key is the shard-order key of chunk i of the batch (C order over
 * the batch's chunk grid): (inner shard, epoch, inner slot) raveled, all
 * from the chunk's own coordinates, so shards cut short by the array's edge
 * (a ragged shard grid) keep every other chunk's key right. Keys are
 * unique; keys no chunk has (slots outside the array) stay empty. */
ZS_HD uint64_t zs_chunk_key(const zs_params *p, uint64_t i)
{
	uint64_t shard = 0, slot = 0, ms = 1, mp = 1;
	const int last = (int)p->rank - 1;
	for (int j = 0; j < last; j++) {
		uint64_t c = i % p->grid[j];
		i /= p->grid[j];
		shard += (c / p->shard[j]) * ms;
		slot += (c % p->shard[j]) * mp;
		ms *= p->shards[j];
		mp *= p->shard[j];
	}
	/* What is left of i is the chunk's epoch within the batch. */
	return (shard * p->epochs + i) * p->inner_slots + slot;
}

#endif /* ZSPOOL_LAYOUT_CUH */
