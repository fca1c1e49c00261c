//go:build cuda

// gorgonia.org/cu calls cuInit in its package initialiser and exits the
// process when it fails, which is what happens on any machine with the
// driver's library but no usable GPU. A binary built with the GPU engine
// must still run there (on the CPU engine), and its tests must skip, so
// this definition of cuInit, linked into the executable, takes the place of
// the driver's for cu's call: it calls the driver's own cuInit, keeps the
// result for kernels to report, and tells cu all went well. kernels checks
// zs_init_result before making any other CUDA call.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <cuda.h>

static CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;

CUresult CUDAAPI cuInit(unsigned int flags)
{
	CUresult (*real)(unsigned int) = (CUresult(*)(unsigned int))dlsym(RTLD_NEXT, "cuInit");
	init_result = real ? real(flags) : CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;
	return CUDA_SUCCESS;
}

CUresult zs_init_result(void) { return init_result; }
