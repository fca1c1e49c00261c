//go:build hostsim

// Package hostsim runs the index math of kernels/layout.cuh on the CPU,
// thread by thread in a plain loop, and the parse's repeat-offset coding of
// kernels/zstdlit_repcode.cuh, so the exact source the GPU compiles can be
// checked against the reference on machines without a GPU (CI runs it from
// `make kernels-check`). It needs a C compiler, not CUDA.
package hostsim

/*
#cgo CFLAGS: -I${SRCDIR}/../.. -O2
#include <stdlib.h>
#include <string.h>
#include "layout.cuh"
#include "reduce.cuh"
#include "zstdlit_repcode.cuh"

static uint32_t sim_rep_code(uint32_t *hist, int *known, uint32_t off, int ll0)
{
	return zl_rep_code(hist, known, off, ll0);
}

// What one scatter thread does for output vector v, minus the warp vote.
static void sim_scatter(const zs_params *p, int wide, const uint8_t *in, uint8_t *out, uint32_t *nonfill)
{
	for (uint64_t v = 0; v < p->total_vecs; v++) {
		uint64_t src = 0, k = 0;
		uint32_t valid;
		if (wide) {
			valid = zs_locate64(p, v, &src, &k);
		} else {
			uint32_t s32 = 0, k32 = 0;
			valid = zs_locate32(p, (uint32_t)v, &s32, &k32);
			src = s32;
			k = k32;
		}
		uint8_t *o = out + v * p->vec;
		for (uint32_t b = 0; b < p->vec; b++) {
			o[b] = b < valid ? in[src + b] : 0;
			if (o[b])
				nonfill[k] = 1;
		}
	}
}

// What the reduce kernels do, frame by frame and element by element.
static void sim_reduce(const zs_reduce_params *p, int kind, int method, uint8_t *dst, const uint8_t *pend,
                       const uint8_t *src, uint64_t has_p, uint64_t n_out, uint64_t nz)
{
	for (uint64_t f = 0; f < n_out; f++) {
		const uint64_t v = f * nz;
		const uint8_t *f0 = v < has_p ? pend : src + (v - has_p) * p->in_frame;
		const uint8_t *f1 = NULL;
		if (nz == 2)
			f1 = v + 1 < has_p ? pend : src + (v + 1 - has_p) * p->in_frame;
		for (uint64_t e = 0; e < p->out_elems; e++)
			zs_reduce_elem(p, kind, method, dst + f * p->out_frame, f0, f1, e);
	}
}

static void sim_keys(const zs_params *p, uint64_t *key_of)
{
	for (uint64_t i = 0; i < p->n_chunks; i++)
		key_of[i] = zs_chunk_key(p, i);
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/zspool/zspool/kernels/internal/layout"
)

// Result is what the kernels would produce for one batch.
type Result struct {
	Layout  []byte
	NonFill []bool
	Keys    []uint64
}

// Run simulates the scatter and the key computation of one batch from its
// encoded parameters; wide picks the 64-bit index path (which the GPU only
// takes for batches of 2 GiB and more).
func Run(p *layout.Params, wide bool, raw []byte) (*Result, error) {
	enc := p.Encode()
	if len(enc) != C.sizeof_zs_params {
		return nil, fmt.Errorf("Go encodes %d bytes of zs_params, C has %d", len(enc), C.sizeof_zs_params)
	}
	if uint64(len(raw)) != p.InBytes {
		return nil, fmt.Errorf("raw batch of %d bytes, params say %d", len(raw), p.InBytes)
	}
	cp := (*C.zs_params)(C.malloc(C.sizeof_zs_params))
	defer C.free(unsafe.Pointer(cp))
	C.memcpy(unsafe.Pointer(cp), unsafe.Pointer(&enc[0]), C.sizeof_zs_params)
	out := make([]byte, p.OutBytes())
	nonfill := make([]uint32, p.NChunks)
	keys := make([]uint64, p.NChunks)
	var in *C.uint8_t
	if len(raw) > 0 {
		in = (*C.uint8_t)(unsafe.Pointer(&raw[0]))
	}
	w := C.int(0)
	if wide {
		w = 1
	}
	C.sim_scatter(cp, w, in, (*C.uint8_t)(unsafe.Pointer(&out[0])), (*C.uint32_t)(unsafe.Pointer(&nonfill[0])))
	C.sim_keys(cp, (*C.uint64_t)(unsafe.Pointer(&keys[0])))
	r := &Result{Layout: out, NonFill: make([]bool, len(nonfill)), Keys: keys}
	for i, f := range nonfill {
		r.NonFill[i] = f != 0
	}
	return r, nil
}

// Reduce runs the reduce kernel's arithmetic on the CPU: nOut output
// frames into dst from the sequence (pend, when hasP) followed by the
// frames of src, nz contributors along dim 0 each.
func Reduce(r *layout.Reduce, dst, pend, src []byte, hasP bool, nOut, nz int64) error {
	enc := r.Encode()
	if len(enc) != C.sizeof_zs_reduce_params {
		return fmt.Errorf("Go encodes %d bytes of zs_reduce_params, C has %d", len(enc), C.sizeof_zs_reduce_params)
	}
	need := func(what string, b []byte, n uint64) error {
		if uint64(len(b)) < n {
			return fmt.Errorf("reduce: %s holds %d bytes, needs %d", what, len(b), n)
		}
		return nil
	}
	inFrames := uint64(nOut * nz)
	h := uint64(0)
	if hasP {
		h = 1
		if err := need("pending frame", pend, r.InFrame); err != nil {
			return err
		}
	}
	if err := need("source", src, (inFrames-min(inFrames, h))*r.InFrame); err != nil {
		return err
	}
	if err := need("destination", dst, uint64(nOut)*r.OutFrame); err != nil {
		return err
	}
	cp := (*C.zs_reduce_params)(C.malloc(C.sizeof_zs_reduce_params))
	defer C.free(unsafe.Pointer(cp))
	C.memcpy(unsafe.Pointer(cp), unsafe.Pointer(&enc[0]), C.sizeof_zs_reduce_params)
	ptr := func(b []byte) *C.uint8_t {
		if len(b) == 0 {
			return nil
		}
		return (*C.uint8_t)(unsafe.Pointer(&b[0]))
	}
	C.sim_reduce(cp, C.int(r.Kind), C.int(r.Method), ptr(dst), ptr(pend), ptr(src), C.uint64_t(h), C.uint64_t(nOut), C.uint64_t(nz))
	return nil
}

// ReduceOffsets reports where the C compiler put zs_reduce_params' last
// array, to check the Go encoding's field order.
func ReduceOffsets() (dOut, size uintptr) {
	var p C.zs_reduce_params
	return unsafe.Offsetof(p.d_out), unsafe.Sizeof(p)
}

// Offsets reports where the C compiler put zs_params' last fields, to
// check the Go encoding's field order.
func Offsets() (dGrid, gatherVec uintptr) {
	var p C.zs_params
	return unsafe.Offsetof(p.d_grid), unsafe.Offsetof(p.gather_vec)
}

// RepCode runs the parse's zl_rep_code: the Offset_Value of off against the
// known entries of hist (known of them), for a sequence whose literal
// length is 0 when ll0, updating hist and known.
func RepCode(hist *[3]uint32, known *int, off uint32, ll0 bool) uint32 {
	h := [3]C.uint32_t{C.uint32_t(hist[0]), C.uint32_t(hist[1]), C.uint32_t(hist[2])}
	k := C.int(*known)
	l := C.int(0)
	if ll0 {
		l = 1
	}
	ov := C.sim_rep_code(&h[0], &k, C.uint32_t(off), l)
	*hist = [3]uint32{uint32(h[0]), uint32(h[1]), uint32(h[2])}
	*known = int(k)
	return uint32(ov)
}
