//go:build cuda

package kernels

/*
#cgo LDFLAGS: -lcuda -ldl
#include <cuda.h>

CUresult zs_init_result(void);
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// initError is the driver's answer to cuInit (see cuinit.c): nil when a
// GPU can be used.
func initError() error {
	if r := C.zs_init_result(); r != C.CUDA_SUCCESS {
		return cuError("cuInit", r)
	}
	return nil
}

func cuError(what string, r C.CUresult) error {
	var name, str *C.char
	C.cuGetErrorName(r, &name)
	C.cuGetErrorString(r, &str)
	if name == nil || str == nil {
		return fmt.Errorf("%s: CUDA error %d", what, int(r))
	}
	return fmt.Errorf("%s: %s (%s)", what, C.GoString(str), C.GoString(name))
}

// hostAlloc allocates n bytes of pinned (page-locked) host memory in the
// current context: the GPU's copy engines read and write it directly, so
// asynchronous copies neither stage through a driver buffer nor block.
// gorgonia.org/cu has no cuMemHostAlloc.
func hostAlloc(n int64) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	var p unsafe.Pointer
	if r := C.cuMemHostAlloc(&p, C.size_t(n), C.CU_MEMHOSTALLOC_PORTABLE); r != C.CUDA_SUCCESS {
		return nil, cuError(fmt.Sprintf("cuMemHostAlloc(%d bytes)", n), r)
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// hostFree releases memory from hostAlloc.
func hostFree(b []byte) error {
	if cap(b) == 0 {
		return nil
	}
	if r := C.cuMemFreeHost(unsafe.Pointer(unsafe.SliceData(b))); r != C.CUDA_SUCCESS {
		return cuError("cuMemFreeHost", r)
	}
	return nil
}

// sharedOptin is the most shared memory a CTA may have on dev once its
// kernel asks for it (setMaxDynamicShared): 227 KiB on an H100, 163 KiB
// on an A100.
func sharedOptin(dev cu.Device) (int, error) {
	n, err := dev.Attribute(cu.DeviceAttribute(C.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))
	if err != nil {
		return 0, fmt.Errorf("shared memory a block may have: %w", err)
	}
	return n, nil
}

// setMaxDynamicShared lets fn's launches ask for n bytes of dynamic shared
// memory (cuFuncSetAttribute, which gorgonia.org/cu does not wrap).
func setMaxDynamicShared(fn cu.Function, n int) error {
	// cu.Function holds the driver's handle as its only field.
	f := *(*C.CUfunction)(unsafe.Pointer(&fn))
	if r := C.cuFuncSetAttribute(f, C.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, C.int(n)); r != C.CUDA_SUCCESS {
		return cuError("allow dynamic shared memory", r)
	}
	return nil
}
