//go:build libzstd

// Package libzstd is libzstd (Debian's libzstd-dev, linked statically)
// behind the encoder signature the benchmarks use, so that the encoders'
// speed is measured side by side with the C library's, one chunk a
// frame, on the same core. Benchmarks only: build with -tags libzstd.
package libzstd

/*
#cgo LDFLAGS: -l:libzstd.a
#include <zstd.h>
*/
import "C"

import (
	"fmt"
	"slices"
	"unsafe"
)

// Available reports whether this build links libzstd.
const Available = true

// Encoder is one libzstd compression context at a fixed level; not safe
// for concurrent use.
type Encoder struct {
	cctx  *C.ZSTD_CCtx
	level C.int
}

// New makes an encoder at a zstd level.
func New(level int) (*Encoder, error) {
	c := C.ZSTD_createCCtx()
	if c == nil {
		return nil, fmt.Errorf("libzstd: ZSTD_createCCtx failed")
	}
	return &Encoder{cctx: c, level: C.int(level)}, nil
}

// Version is libzstd's version string.
func Version() string { return C.GoString(C.ZSTD_versionString()) }

// Encode appends src compressed as one zstd frame to dst.
func (e *Encoder) Encode(dst, src []byte) ([]byte, error) {
	bound := int(C.ZSTD_compressBound(C.size_t(len(src))))
	dst = slices.Grow(dst, bound)
	out := dst[len(dst) : len(dst)+bound]
	var in unsafe.Pointer
	if len(src) > 0 {
		in = unsafe.Pointer(&src[0])
	}
	n := C.ZSTD_compressCCtx(e.cctx, unsafe.Pointer(&out[0]), C.size_t(bound), in, C.size_t(len(src)), e.level)
	if C.ZSTD_isError(n) != 0 {
		return dst, fmt.Errorf("libzstd: %s", C.GoString(C.ZSTD_getErrorName(n)))
	}
	return dst[:len(dst)+int(n)], nil
}

// Close frees the context.
func (e *Encoder) Close() {
	if e.cctx != nil {
		C.ZSTD_freeCCtx(e.cctx)
		e.cctx = nil
	}
}
