/*
 * reduce.cuh — one pyramid element of zspool's GPU engine: the reduction of
 * the in-bounds contributors of one output element of level l+1 from the
 * frames of level l, with exactly the semantics of the CPU engine's
 * pipeline.Reducer, so that every engine stores the same bytes:
 *
 *   - the box is 2 along every halved inner dim (1 at a ragged edge) and, for
 *     a z-stack, 2 along dim 0 (1 for a trailing unpaired frame);
 *   - mean sums in 128 bits for integers (two's complement for signed types)
 *     and in float64 for floats, in C order of the box with the dim-0
 *     contributors outermost, and divides by the true contributor count,
 *     rounding toward −∞ for integers. The count is a product of 1s and 2s,
 *     a power of two, so the integer division is an exact floor shift;
 *   - min and max compare in the element's own type (floats through
 *     float64, as the CPU does); decimate takes the box's first element;
 *   - NaNs come out with the bits the CPU engine gives them (below);
 *   - elements are loaded and stored in the byte order they are stored in
 *     (the bytes codec's endian): level data never changes byte order.
 *
 * Plain C99 like layout.cuh: nvcc compiles it into the kernels (with kind
 * and method as compile-time constants, so every switch folds away) and cgo
 * into the host simulation (kernels/internal/hostsim), which checks it
 * against pipeline.Reducer on machines without a GPU.
 */
#ifndef ZSPOOL_REDUCE_CUH
#define ZSPOOL_REDUCE_CUH

#include "layout.cuh"

#ifndef __CUDACC__
#include <string.h>
#endif

/* Element kinds (the manifest's dtypes) and methods. Keep in step with
 * kernels/internal/layout/reduce.go. */
#define ZS_U8 0
#define ZS_I8 1
#define ZS_U16 2
#define ZS_I16 3
#define ZS_U32 4
#define ZS_I32 5
#define ZS_U64 6
#define ZS_I64 7
#define ZS_F32 8
#define ZS_F64 9
#define ZS_KINDS 10

#define ZS_MEAN 0
#define ZS_MIN 1
#define ZS_MAX 2
#define ZS_DECIMATE 3

/* One level's reduction parameters, in device memory; the Go side
 * serialises them field by field in this order, little endian
 * (layout.Reduce.Encode). Inner dims are dims ≥ 1 in C order: index 0 is
 * dim 1. All fields are 8 bytes, so there is no padding. */
typedef struct {
	uint64_t rank;       /* k: inner dims, 0…7 */
	uint64_t swap;       /* 1: elements are stored big endian */
	uint64_t halved;     /* H: inner dims this level halves */
	uint64_t narrow;     /* 1: out_elems < 2^32, so coordinates take the Div32 path */
	uint64_t out_elems;  /* elements of one output frame */
	uint64_t in_frame;   /* bytes of one input frame */
	uint64_t out_frame;  /* bytes of one output frame */
	uint64_t in_shape[ZS_MAX_RANK];
	uint64_t out_shape[ZS_MAX_RANK];
	uint64_t in_stride[ZS_MAX_RANK]; /* bytes */
	uint64_t half[ZS_MAX_RANK];      /* 1: the dim is halved */
	uint64_t hstride[ZS_MAX_RANK];   /* in_stride of the halved dims, the fastest first */
	zs_div32 d_out[ZS_MAX_RANK];     /* ÷ out_shape[d] */
} zs_reduce_params;

ZS_HD uint32_t zs_kind_elem(int kind)
{
	switch (kind) {
	case ZS_U8:
	case ZS_I8:
		return 1;
	case ZS_U16:
	case ZS_I16:
		return 2;
	case ZS_U32:
	case ZS_I32:
	case ZS_F32:
		return 4;
	}
	return 8;
}

ZS_HD int zs_kind_signed(int kind) { return kind == ZS_I8 || kind == ZS_I16 || kind == ZS_I32 || kind == ZS_I64; }

ZS_HD int zs_kind_float(int kind) { return kind == ZS_F32 || kind == ZS_F64; }

/* zs_bswap reverses the low elem bytes of u. */
ZS_HD uint64_t zs_bswap(uint64_t u, uint32_t elem)
{
	uint64_t r = 0;
	for (uint32_t i = 0; i < elem; i++) {
		r = (r << 8) | (u & 0xff);
		u >>= 8;
	}
	return r;
}

/* zs_load reads one element's bits, in the machine's order. */
ZS_HD uint64_t zs_load(const uint8_t *b, uint32_t elem, uint64_t swap)
{
	uint64_t u;
#ifdef __CUDA_ARCH__
	switch (elem) {
	case 1:
		u = *b;
		break;
	case 2:
		u = *(const uint16_t *)b;
		break;
	case 4:
		u = *(const uint32_t *)b;
		break;
	default:
		u = *(const uint64_t *)b;
	}
#else
	switch (elem) {
	case 1:
		u = *b;
		break;
	case 2: {
		uint16_t v;
		memcpy(&v, b, 2);
		u = v;
		break;
	}
	case 4: {
		uint32_t v;
		memcpy(&v, b, 4);
		u = v;
		break;
	}
	default:
		memcpy(&u, b, 8);
	}
#endif
	return swap ? zs_bswap(u, elem) : u;
}

ZS_HD void zs_store(uint8_t *b, uint32_t elem, uint64_t swap, uint64_t u)
{
	if (swap)
		u = zs_bswap(u, elem);
#ifdef __CUDA_ARCH__
	switch (elem) {
	case 1:
		*b = (uint8_t)u;
		break;
	case 2:
		*(uint16_t *)b = (uint16_t)u;
		break;
	case 4:
		*(uint32_t *)b = (uint32_t)u;
		break;
	default:
		*(uint64_t *)b = u;
	}
#else
	switch (elem) {
	case 1:
		*b = (uint8_t)u;
		break;
	case 2: {
		uint16_t v = (uint16_t)u;
		memcpy(b, &v, 2);
		break;
	}
	case 4: {
		uint32_t v = (uint32_t)u;
		memcpy(b, &v, 4);
		break;
	}
	default:
		memcpy(b, &u, 8);
	}
#endif
}

/* zs_signed sign-extends an element's bits. */
ZS_HD int64_t zs_signed(uint64_t u, uint32_t elem)
{
	switch (elem) {
	case 1:
		return (int64_t)(int8_t)(uint8_t)u;
	case 2:
		return (int64_t)(int16_t)(uint16_t)u;
	case 4:
		return (int64_t)(int32_t)(uint32_t)u;
	}
	return (int64_t)u;
}

ZS_HD uint64_t zs_dbits(double d)
{
#ifdef __CUDA_ARCH__
	return (uint64_t)__double_as_longlong(d);
#else
	uint64_t u;
	memcpy(&u, &d, 8);
	return u;
#endif
}

ZS_HD double zs_bitsd(uint64_t u)
{
#ifdef __CUDA_ARCH__
	return __longlong_as_double((long long)u);
#else
	double d;
	memcpy(&d, &u, 8);
	return d;
#endif
}

/* NaNs. The CPU engine is Go compiled for amd64, whose SSE instructions
 * give NaNs particular bits; the GPU's own give others (a canonical NaN).
 * So that a NaN in the data reduces to the same bits on every engine, the
 * float arithmetic below spells out the SSE rules: an operation on a NaN
 * returns that NaN quieted (the first operand's when both are NaN: Go
 * compiles acc += v as ADDSD with acc first), an invalid operation
 * (∞ − ∞) returns the default NaN, and conversions between float32 and
 * float64 keep the NaN's sign and the top of its payload, quieted. */
#define ZS_F64_QUIET 0x0008000000000000ull
#define ZS_F64_DEFAULT_NAN 0xfff8000000000000ull

ZS_HD int zs_nan64(uint64_t u) { return (u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull; }

ZS_HD int zs_nan32(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

/* zs_fadd is a + b as ADDSD computes it. */
ZS_HD double zs_fadd(double a, double b)
{
	const uint64_t ua = zs_dbits(a), ub = zs_dbits(b);
	if (zs_nan64(ua))
		return zs_bitsd(ua | ZS_F64_QUIET);
	if (zs_nan64(ub))
		return zs_bitsd(ub | ZS_F64_QUIET);
	const double r = a + b;
	return zs_nan64(zs_dbits(r)) ? zs_bitsd(ZS_F64_DEFAULT_NAN) : r;
}

/* zs_fdiv is a / c for a count c ≥ 1, as DIVSD computes it. */
ZS_HD double zs_fdiv(double a, double c)
{
	const uint64_t ua = zs_dbits(a);
	return zs_nan64(ua) ? zs_bitsd(ua | ZS_F64_QUIET) : a / c;
}

/* zs_float is an element's value as float64 (CVTSS2SD for float32). */
ZS_HD double zs_float(uint64_t u, uint32_t elem)
{
	if (elem != 4)
		return zs_bitsd(u);
	const uint32_t b = (uint32_t)u;
	if (zs_nan32(b))
		return zs_bitsd(((uint64_t)(b >> 31) << 63) | 0x7ff8000000000000ull | ((uint64_t)(b & 0x3fffffu) << 29));
#ifdef __CUDA_ARCH__
	return (double)__uint_as_float(b);
#else
	float f;
	memcpy(&f, &b, 4);
	return (double)f;
#endif
}

/* zs_float_bits is the element bits of v (CVTSD2SS, rounding to nearest
 * even, for float32). */
ZS_HD uint64_t zs_float_bits(double v, uint32_t elem)
{
	const uint64_t u = zs_dbits(v);
	if (elem != 4)
		return u;
	if (zs_nan64(u))
		return ((u >> 63) << 31) | 0x7fc00000u | ((u >> 29) & 0x3fffffu);
#ifdef __CUDA_ARCH__
	return (uint64_t)__float_as_uint(__double2float_rn(v));
#else
	float f = (float)v;
	uint32_t b;
	memcpy(&b, &f, 4);
	return b;
#endif
}

ZS_HD uint32_t zs_popcount(uint32_t x)
{
#ifdef __CUDA_ARCH__
	return (uint32_t)__popc(x);
#else
	uint32_t n = 0;
	for (; x; x &= x - 1)
		n++;
	return n;
#endif
}

/* zs_reduce_elem writes output element e of one output frame at dst, from
 * the input frame f0 and, when the element has two contributors along dim
 * 0, f1 (NULL otherwise). */
ZS_HD void zs_reduce_elem(const zs_reduce_params *p, int kind, int method, uint8_t *dst, const uint8_t *f0,
                          const uint8_t *f1, uint64_t e)
{
	const uint32_t elem = zs_kind_elem(kind);
	const uint64_t at = e;
	const int k = (int)p->rank;
	uint64_t base = 0;
	uint32_t avail = 0; /* bit j: the j-th halved dim from the fastest has both contributors in bounds */
	uint32_t j = 0;
	uint32_t e32 = (uint32_t)e;
	const int narrow = p->narrow != 0;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
	for (int i = 0; i < ZS_MAX_RANK - 1; i++) {
		const int d = k - 1 - i;
		if (d >= 0) {
			uint64_t o;
			if (narrow) {
				const uint32_t q = zs_div(p->d_out[d], e32);
				o = e32 - q * (uint32_t)p->out_shape[d];
				e32 = q;
			} else {
				o = e % p->out_shape[d];
				e /= p->out_shape[d];
			}
			if (p->half[d]) {
				const uint64_t lo = 2 * o;
				base += lo * p->in_stride[d];
				if (lo + 1 < p->in_shape[d])
					avail |= 1u << j;
				j++;
			} else {
				base += o * p->in_stride[d];
			}
		}
	}
	const uint32_t H = (uint32_t)p->halved;
	const uint32_t nb = 1u << H;
	const uint32_t shift = zs_popcount(avail) + (f1 ? 1u : 0u); /* log2 of the contributor count */
	const uint64_t swap = p->swap;

	double fa = 0;             /* floats */
	uint64_t lo = 0, hi = 0;   /* integer mean: a 128-bit sum */
	uint64_t ua = 0;           /* unsigned min, max, decimate */
	int64_t ia = 0;            /* signed min, max, decimate */
	int first = 1, done = 0;
	for (int s = 0; s < 2 && !done; s++) {
		const uint8_t *fr = s ? f1 : f0;
		if (!fr)
			break;
		for (uint32_t b = 0; b < nb && !done; b++) {
			if (b & ~avail)
				continue;
			uint64_t off = base;
			for (uint32_t t = 0; t < H; t++)
				if ((b >> t) & 1u)
					off += p->hstride[t];
			const uint64_t u = zs_load(fr + off, elem, swap);
			if (zs_kind_float(kind)) {
				const double v = zs_float(u, elem);
				if (method == ZS_MEAN)
					fa = zs_fadd(fa, v);
				else if (method == ZS_MIN) {
					if (first || v < fa)
						fa = v;
				} else if (method == ZS_MAX) {
					if (first || v > fa)
						fa = v;
				} else
					fa = v;
			} else if (zs_kind_signed(kind)) {
				const int64_t v = zs_signed(u, elem);
				if (method == ZS_MEAN) {
					const uint64_t x = lo + (uint64_t)v;
					hi += (v < 0 ? ~(uint64_t)0 : 0) + (x < lo ? 1u : 0u);
					lo = x;
				} else if (method == ZS_MIN) {
					if (first || v < ia)
						ia = v;
				} else if (method == ZS_MAX) {
					if (first || v > ia)
						ia = v;
				} else
					ia = v;
			} else {
				if (method == ZS_MEAN) {
					const uint64_t x = lo + u;
					hi += x < lo ? 1u : 0u;
					lo = x;
				} else if (method == ZS_MIN) {
					if (first || u < ua)
						ua = u;
				} else if (method == ZS_MAX) {
					if (first || u > ua)
						ua = u;
				} else
					ua = u;
			}
			first = 0;
			if (method == ZS_DECIMATE)
				done = 1;
		}
	}

	uint64_t out;
	if (zs_kind_float(kind)) {
		if (method == ZS_MEAN)
			fa = zs_fdiv(fa, (double)(1u << shift));
		out = zs_float_bits(fa, elem);
	} else if (method == ZS_MEAN) {
		/* ⌊(hi:lo) / 2^shift⌋ as a 128-bit arithmetic shift: its low
		 * 64 bits are the mean, which fits the element's type. */
		out = shift ? (lo >> shift) | (hi << (64 - shift)) : lo;
	} else {
		out = zs_kind_signed(kind) ? (uint64_t)ia : ua;
	}
	zs_store(dst + at * elem, elem, swap, out);
}

#endif /* ZSPOOL_REDUCE_CUH */
