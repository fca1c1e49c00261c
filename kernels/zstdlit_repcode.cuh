/*
 * zstdlit_repcode.cuh — the parse's repeat-offset coding (zstdlit's
 * repCode), shared by the CUDA parse (zstdlit_parse.cuh, inside namespace
 * zl) and a host-side check that runs it on the CPU against the rules of
 * RFC 8878 §3.1.1.5 (kernels/internal/hostsim), as CI has no GPU.
 *
 * Plain C99 on purpose, as layout.cuh: cgo compiles it for the host check,
 * nvcc for the device.
 */
#ifndef ZSPOOL_ZSTDLIT_REPCODE_CUH
#define ZSPOOL_ZSTDLIT_REPCODE_CUH

#ifdef __CUDACC__
#define ZL_HD __host__ __device__ __forceinline__
#else
#include <stdint.h>
#define ZL_HD static inline
#endif

/* zl_rep_code is the Offset_Value of off against the segment's known
 * repeat offsets (hist[0..*known-1]; a segment starts knowing none), for a
 * sequence whose literal length is 0 when ll0, and updates hist and
 * *known as the decoder's history moves. Worked out with selects, not
 * branches: written as repCode's early returns and else-ifs, nvcc made it
 * two nested branch regions a sequence, which the lanes of a warp, each
 * at a sequence of its own kind, took one after the other. */
ZL_HD uint32_t zl_rep_code(uint32_t *hist, int *known, uint32_t off, int ll0)
{
	const int k = *known;
	const uint32_t h0 = hist[0], h1 = hist[1], h2 = hist[2];
	const int r0 = !ll0 & (k >= 1) & (off == h0);
	const int r1 = (k >= 2) & (off == h1);
	const int r2 = (k >= 3) & (off == h2);
	const int m1 = ll0 & (k >= 1) & (off == h0 - 1);
	uint32_t ov = m1 ? 3 : off + 3;
	ov = r2 ? (ll0 ? 2 : 3) : ov;
	ov = r1 ? (ll0 ? 1 : 2) : ov;
	ov = r0 ? 1 : ov;
	/* r0 leaves the history; r1 swaps the first two (off is h1); any other
	 * offset goes in front. Both put off first and h0 second. */
	hist[0] = r0 ? h0 : off;
	hist[1] = r0 ? h1 : h0;
	hist[2] = r0 | r1 ? h2 : h1;
	*known = r0 | r1 ? k : (k + 1 < 3 ? k + 1 : 3);
	return ov;
}

#endif
