// zspool.cu — the GPU engine's kernels: scatter (raw epoch batch → chunk
// layout, with an all-fill flag per chunk), aggregate (chunk sizes into
// shard order, exclusive scan, gather into one shard-ordered buffer) and
// reduce (pyramid level l+1's dense frames from level l's).
//
// Built by `make kernels` into zspool.fatbin (compute_80 PTX + sm_90 SASS),
// which the Go side embeds. The index math lives in layout.cuh and the
// pyramid arithmetic in reduce.cuh, both shared with the host-side check.

#include "layout.cuh"
#include "reduce.cuh"
#include "zstdlit.cuh"

namespace {

constexpr unsigned kFullMask = 0xffffffffu;

// Vec is the type of one V-byte access.
template <int V> struct Vec;
template <> struct Vec<1> { typedef uint8_t T; };
template <> struct Vec<2> { typedef uint16_t T; };
template <> struct Vec<4> { typedef uint32_t T; };
template <> struct Vec<8> { typedef uint2 T; };
template <> struct Vec<16> { typedef uint4 T; };

__device__ __forceinline__ bool nonzero(uint8_t v) { return v != 0; }
__device__ __forceinline__ bool nonzero(uint16_t v) { return v != 0; }
__device__ __forceinline__ bool nonzero(uint32_t v) { return v != 0; }
__device__ __forceinline__ bool nonzero(uint2 v) { return (v.x | v.y) != 0; }
__device__ __forceinline__ bool nonzero(uint4 v) { return (v.x | v.y | v.z | v.w) != 0; }

template <typename Ix> struct Locate;
template <> struct Locate<uint32_t> {
	static __device__ __forceinline__ uint32_t at(const zs_params *p, uint32_t v, uint32_t *src, uint32_t *chunk)
	{
		return zs_locate32(p, v, src, chunk);
	}
};
template <> struct Locate<uint64_t> {
	static __device__ __forceinline__ uint32_t at(const zs_params *p, uint64_t v, uint64_t *src, uint64_t *chunk)
	{
		return zs_locate64(p, v, src, chunk);
	}
};

// scatter writes every output vector of the chunk layout exactly once,
// reading its bytes from the raw batch (or 0 for padding). Consecutive lanes
// take consecutive output vectors, which are consecutive raw bytes along a
// chunk row, so loads and stores are both coalesced for rows of 32 bytes and
// up. A warp walks the grid-stride loop as a whole (every lane the same trip
// count) so it can vote: nonfill[k] is set for any chunk k that holds a
// non-zero byte, one store per warp when the warp lies in one chunk.
template <typename Ix, int V>
__device__ __forceinline__ void scatter(const zs_params *__restrict__ p, const uint8_t *__restrict__ in,
                                        uint8_t *__restrict__ out, uint32_t *__restrict__ nonfill)
{
	typedef typename Vec<V>::T T;
	const Ix total = (Ix)p->total_vecs;
	const unsigned lane = threadIdx.x & 31u;
	const Ix stride = (Ix)gridDim.x * blockDim.x;
	for (Ix base = (Ix)blockIdx.x * blockDim.x + (threadIdx.x & ~31u); base < total; base += stride) {
		const Ix v = base + lane;
		const bool active = v < total;
		T val;
		memset(&val, 0, sizeof val);
		Ix src = 0, k = 0;
		if (active) {
			const uint32_t valid = Locate<Ix>::at(p, v, &src, &k);
			if (valid == V) {
				val = __ldg(reinterpret_cast<const T *>(in + src));
			} else if (valid > 0) {
				uint8_t b[V];
#pragma unroll
				for (int i = 0; i < V; i++)
					b[i] = i < (int)valid ? in[src + i] : 0;
				memcpy(&val, b, V);
			}
			reinterpret_cast<T *>(out)[v] = val;
		}
		const bool nz = active && nonzero(val);
		const unsigned ballot = __ballot_sync(kFullMask, nz);
		const Ix k0 = __shfl_sync(kFullMask, k, 0);
		if (__all_sync(kFullMask, !active || k == k0)) {
			if (lane == 0 && ballot != 0)
				nonfill[k0] = 1;
		} else if (nz) {
			nonfill[k] = 1;
		}
	}
}

// chunk_keys gives every chunk of the batch its shard-order key and puts
// its stored size (chunk_bytes, or 0 when it is all fill and so absent) at
// that key. sizes must be zeroed first: keys of slots outside the array
// keep size 0.
__device__ __forceinline__ void chunk_keys(const zs_params *__restrict__ p, const uint32_t *__restrict__ nonfill,
                                           uint64_t *__restrict__ key_of, uint64_t *__restrict__ sizes)
{
	for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p->n_chunks;
	     i += (uint64_t)gridDim.x * blockDim.x) {
		const uint64_t key = zs_chunk_key(p, i);
		key_of[i] = key;
		sizes[key] = nonfill[i] ? p->chunk_bytes : 0;
	}
}

// warp_scan is the inclusive sum over the warp's lanes.
__device__ __forceinline__ uint64_t warp_scan(uint64_t x, unsigned lane)
{
#pragma unroll
	for (int d = 1; d < 32; d <<= 1) {
		const uint64_t y = __shfl_up_sync(kFullMask, x, d);
		if (lane >= (unsigned)d)
			x += y;
	}
	return x;
}

// exclusive_scan writes offsets[k] = Σ_{k'<k} sizes[k'] and offsets[n] =
// the total, in one block that walks the keys a tile at a time carrying the
// running sum. Key counts are chunks per batch (rarely past a few
// thousand), so one block is plenty and keeps the scan a single launch.
__device__ __forceinline__ void exclusive_scan(const uint64_t *__restrict__ sizes, uint64_t n,
                                               uint64_t *__restrict__ offsets)
{
	__shared__ uint64_t warp_sums[32];
	__shared__ uint64_t carry;
	const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
	const unsigned warps = blockDim.x >> 5;
	if (threadIdx.x == 0)
		carry = 0;
	__syncthreads();
	for (uint64_t base = 0; base < n; base += blockDim.x) {
		const uint64_t i = base + threadIdx.x;
		const uint64_t x = i < n ? sizes[i] : 0;
		const uint64_t incl = warp_scan(x, lane);
		if (lane == 31)
			warp_sums[warp] = incl;
		__syncthreads();
		if (warp == 0) {
			const uint64_t s = lane < warps ? warp_sums[lane] : 0;
			warp_sums[lane] = warp_scan(s, lane) - s; // exclusive over warps
		}
		__syncthreads();
		const uint64_t c = carry;
		if (i < n)
			offsets[i] = c + warp_sums[warp] + incl - x;
		__syncthreads();
		if (threadIdx.x == blockDim.x - 1)
			carry = c + warp_sums[warp] + incl;
		__syncthreads();
	}
	if (threadIdx.x == 0)
		offsets[n] = carry;
}

// gather copies every present chunk from the chunk layout to its place in
// the shard-ordered buffer: blockIdx.y walks the chunks, x the chunk's
// G-byte vectors. Absent chunks (size 0) are skipped, so the buffer holds
// exactly the bytes the scan counted.
template <int G>
__device__ __forceinline__ void gather(const zs_params *__restrict__ p, const uint8_t *__restrict__ layout,
                                       const uint64_t *__restrict__ key_of, const uint64_t *__restrict__ offsets,
                                       uint8_t *__restrict__ out)
{
	typedef typename Vec<G>::T T;
	const uint64_t per_chunk = p->chunk_bytes / G;
	for (uint64_t i = blockIdx.y; i < p->n_chunks; i += gridDim.y) {
		const uint64_t key = key_of[i];
		const uint64_t off = offsets[key];
		if (offsets[key + 1] == off)
			continue;
		const T *src = reinterpret_cast<const T *>(layout + i * p->chunk_bytes);
		T *dst = reinterpret_cast<T *>(out + off);
		for (uint64_t w = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; w < per_chunk;
		     w += (uint64_t)gridDim.x * blockDim.x)
			dst[w] = __ldg(src + w);
	}
}

// reduce writes n_out dense output frames of a pyramid level at dst, each
// reduced from the level above. The frames along dim 0 form one sequence V:
// the pending frame (when has_p is 1) followed by the frames at src.
// Output frame f takes its dim-0 contributors from V[f·nz] and, when nz is
// 2 (a z-stack), V[f·nz + 1]; nz is 1 otherwise, and for a trailing
// unpaired frame reduced alone. blockIdx.y walks the output frames, x the
// elements of one frame.
template <int KIND, int METHOD>
__device__ __forceinline__ void reduce(const zs_reduce_params *__restrict__ p, uint8_t *__restrict__ dst,
                                       const uint8_t *__restrict__ pend, const uint8_t *__restrict__ src,
                                       uint64_t has_p, uint64_t n_out, uint64_t nz)
{
	const uint64_t per = p->out_elems, in_frame = p->in_frame, out_frame = p->out_frame;
	for (uint64_t f = blockIdx.y; f < n_out; f += gridDim.y) {
		const uint64_t v = f * nz;
		const uint8_t *f0 = v < has_p ? pend : src + (v - has_p) * in_frame;
		const uint8_t *f1 = NULL;
		if (nz == 2)
			f1 = v + 1 < has_p ? pend : src + (v + 1 - has_p) * in_frame;
		uint8_t *out = dst + f * out_frame;
		for (uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; e < per;
		     e += (uint64_t)gridDim.x * blockDim.x)
			zs_reduce_elem(p, KIND, METHOD, out, f0, f1, e);
	}
}

} // namespace

// The exported entry points: one per index width and access size, so the
// host picks the widest access the shapes' alignment allows.
#define ZS_SCATTER(NAME, IX, V)                                                                      \
	extern "C" __global__ void __launch_bounds__(256) NAME(const zs_params *p, const uint8_t *in,  \
	                                                       uint8_t *out, uint32_t *nonfill)        \
	{                                                                                                \
		scatter<IX, V>(p, in, out, nonfill);                                                     \
	}
ZS_SCATTER(zs_scatter32_v1, uint32_t, 1)
ZS_SCATTER(zs_scatter32_v2, uint32_t, 2)
ZS_SCATTER(zs_scatter32_v4, uint32_t, 4)
ZS_SCATTER(zs_scatter32_v8, uint32_t, 8)
ZS_SCATTER(zs_scatter32_v16, uint32_t, 16)
ZS_SCATTER(zs_scatter64_v1, uint64_t, 1)
ZS_SCATTER(zs_scatter64_v2, uint64_t, 2)
ZS_SCATTER(zs_scatter64_v4, uint64_t, 4)
ZS_SCATTER(zs_scatter64_v8, uint64_t, 8)
ZS_SCATTER(zs_scatter64_v16, uint64_t, 16)

extern "C" __global__ void zs_chunk_keys(const zs_params *p, const uint32_t *nonfill, uint64_t *key_of,
                                         uint64_t *sizes)
{
	chunk_keys(p, nonfill, key_of, sizes);
}

extern "C" __global__ void __launch_bounds__(1024) zs_exclusive_scan(const uint64_t *sizes, uint64_t n,
                                                                     uint64_t *offsets)
{
	exclusive_scan(sizes, n, offsets);
}

#define ZS_GATHER(NAME, G)                                                                           \
	extern "C" __global__ void NAME(const zs_params *p, const uint8_t *layout, const uint64_t *key_of, \
	                                const uint64_t *offsets, uint8_t *out)                          \
	{                                                                                                \
		gather<G>(p, layout, key_of, offsets, out);                                              \
	}
ZS_GATHER(zs_gather_v1, 1)
ZS_GATHER(zs_gather_v2, 2)
ZS_GATHER(zs_gather_v4, 4)
ZS_GATHER(zs_gather_v8, 8)
ZS_GATHER(zs_gather_v16, 16)

// zs_reduce_k<kind>_m<method>: one kernel per element kind and method
// (reduce.cuh's ZS_* numbers), so the arithmetic is specialised at compile
// time.
#define ZS_REDUCE(KIND, METHOD)                                                                      \
	extern "C" __global__ void __launch_bounds__(256)                                            \
	    zs_reduce_k##KIND##_m##METHOD(const zs_reduce_params *p, uint8_t *dst, const uint8_t *pend, \
	                                  const uint8_t *src, uint64_t has_p, uint64_t n_out, uint64_t nz) \
	{                                                                                            \
		reduce<KIND, METHOD>(p, dst, pend, src, has_p, n_out, nz);                           \
	}
#define ZS_REDUCE_METHODS(KIND) ZS_REDUCE(KIND, 0) ZS_REDUCE(KIND, 1) ZS_REDUCE(KIND, 2) ZS_REDUCE(KIND, 3)
ZS_REDUCE_METHODS(0)
ZS_REDUCE_METHODS(1)
ZS_REDUCE_METHODS(2)
ZS_REDUCE_METHODS(3)
ZS_REDUCE_METHODS(4)
ZS_REDUCE_METHODS(5)
ZS_REDUCE_METHODS(6)
ZS_REDUCE_METHODS(7)
ZS_REDUCE_METHODS(8)
ZS_REDUCE_METHODS(9)
