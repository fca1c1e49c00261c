package pipeline

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/zarr"
)

// Reducer computes one pyramid level's frames from the level above: each
// output element reduces the in-bounds elements of its box (2 along every
// downsampled dim, 1 along the others; fewer at a ragged edge). mean sums
// in a wide accumulator and divides by the true contributor count, floor
// division for integers, float64 for floats; min and max compare; decimate
// takes the box's first (even-index) element.
type Reducer struct {
	method string
	dtype  zarr.DType
	order  binary.ByteOrder
	elem   int
}

// NewReducer makes a reducer for a manifest's method, dtype and byte order.
func NewReducer(m *config.Manifest) (*Reducer, error) {
	r := &Reducer{method: "mean", dtype: m.DType, order: binary.LittleEndian, elem: m.DType.Size()}
	if m.Multiscale != nil && m.Multiscale.Method != "" {
		r.method = m.Multiscale.Method
	}
	if m.ByteOrder == "big" {
		r.order = binary.BigEndian
	}
	switch r.method {
	case "mean", "min", "max", "decimate":
	default:
		return nil, fmt.Errorf("multiscale.method: %q is not one of mean, min, max, decimate", r.method)
	}
	return r, nil
}

// Reduce writes into dst the output frame reduced from srcs (one or two
// input frames: the dim-0 contributors) of inner shape in to inner shape
// out; half[d] says whether inner dim d (dims ≥ 1, here 0-based) is halved.
func (r *Reducer) Reduce(dst []byte, srcs [][]byte, in, out []int64, half []bool) {
	k := len(in)
	inStride := make([]int64, k)
	s := int64(r.elem)
	for d := k - 1; d >= 0; d-- {
		inStride[d] = s
		s *= in[d]
	}
	lo := make([]int64, k)
	n := make([]int64, k)
	idx := make([]int64, k)
	var outOff int64
	_ = zarr.ForEach(out, func(o []int64) error {
		var base int64
		cnt := int64(len(srcs))
		for d := range k {
			if half[d] {
				lo[d] = 2 * o[d]
				n[d] = min(2, in[d]-lo[d])
			} else {
				lo[d], n[d] = o[d], 1
			}
			base += lo[d] * inStride[d]
			cnt *= n[d]
		}
		r.reduceBox(dst[outOff:outOff+int64(r.elem)], srcs, base, inStride, n, idx, cnt)
		outOff += int64(r.elem)
		return nil
	})
}

// reduceBox visits the box's elements in every source frame and reduces
// them into one element at dst.
func (r *Reducer) reduceBox(dst []byte, srcs [][]byte, base int64, stride, n, idx []int64, cnt int64) {
	var acc accumulator
	acc.init(r)
	first := true
	for _, src := range srcs {
		clear(idx)
		for {
			off := base
			for d := range idx {
				off += idx[d] * stride[d]
			}
			acc.add(r, src[off:], first)
			first = false
			if r.method == "decimate" {
				break
			}
			d := len(idx) - 1
			for ; d >= 0; d-- {
				idx[d]++
				if idx[d] < n[d] {
					break
				}
				idx[d] = 0
			}
			if d < 0 {
				break
			}
		}
		if r.method == "decimate" {
			break
		}
	}
	acc.store(r, dst, cnt)
}

// accumulator holds one output element's running reduction, wide enough
// for 2^8 contributors of any dtype: floats in float64, integers in 128
// bits (hi:lo, two's complement for signed types).
type accumulator struct {
	f      float64
	hi, lo uint64
	u      uint64
	i      int64
}

func (a *accumulator) init(r *Reducer) { *a = accumulator{} }

func (r *Reducer) loadU(b []byte) uint64 { return LoadUint(r.order, b, r.elem) }

func (r *Reducer) loadI(b []byte) int64 {
	u := r.loadU(b)
	switch r.elem {
	case 1:
		return int64(int8(u))
	case 2:
		return int64(int16(u))
	case 4:
		return int64(int32(u))
	}
	return int64(u)
}

func (r *Reducer) loadF(b []byte) float64 {
	if r.elem == 4 {
		return float64(math.Float32frombits(uint32(r.loadU(b))))
	}
	return math.Float64frombits(r.loadU(b))
}

func (r *Reducer) storeU(b []byte, v uint64) { StoreUint(r.order, b, r.elem, v) }

// keep folds v into acc for min, max or decimate (the last value wins).
func keep[T float64 | int64 | uint64](method string, acc *T, v T, first bool) {
	switch method {
	case "min":
		if first || v < *acc {
			*acc = v
		}
	case "max":
		if first || v > *acc {
			*acc = v
		}
	default:
		*acc = v
	}
}

func (a *accumulator) add(r *Reducer, b []byte, first bool) {
	switch {
	case r.dtype.IsFloat():
		v := r.loadF(b)
		if r.method != "mean" {
			keep(r.method, &a.f, v, first)
			break
		}
		a.f += v
	case r.dtype.IsSigned():
		v := r.loadI(b)
		if r.method != "mean" {
			keep(r.method, &a.i, v, first)
			break
		}
		var c uint64
		a.lo, c = bits.Add64(a.lo, uint64(v), 0)
		a.hi += uint64(v>>63) + c // sign-extend v into the high word
	default:
		v := r.loadU(b)
		if r.method != "mean" {
			keep(r.method, &a.u, v, first)
			break
		}
		var c uint64
		a.lo, c = bits.Add64(a.lo, v, 0)
		a.hi += c
	}
}

func (a *accumulator) store(r *Reducer, dst []byte, cnt int64) {
	switch {
	case r.dtype.IsFloat():
		v := a.f
		if r.method == "mean" {
			v /= float64(cnt)
		}
		if r.elem == 4 {
			r.storeU(dst, uint64(math.Float32bits(float32(v))))
		} else {
			r.storeU(dst, math.Float64bits(v))
		}
	case r.dtype.IsSigned():
		v := a.i
		if r.method == "mean" {
			v = floorDiv128(a.hi, a.lo, uint64(cnt))
		}
		r.storeU(dst, uint64(v))
	default:
		v := a.u
		if r.method == "mean" {
			v = div128(a.hi, a.lo, uint64(cnt))
		}
		r.storeU(dst, v)
	}
}

// div128 is ⌊(hi:lo) / c⌋ for an unsigned 128-bit dividend whose quotient
// fits 64 bits (a mean of 64-bit values always does).
func div128(hi, lo, c uint64) uint64 {
	_, r := bits.Div64(0, hi, c)
	q, _ := bits.Div64(r, lo, c)
	return q
}

// floorDiv128 is ⌊(hi:lo) / c⌋ for a two's-complement 128-bit dividend,
// rounding toward −∞ as floor division must for negative sums.
func floorDiv128(hi, lo, c uint64) int64 {
	if int64(hi) >= 0 {
		return int64(div128(hi, lo, c))
	}
	// Magnitude of the negative sum, then ⌊−m/c⌋ = −⌈m/c⌉.
	nlo, b := bits.Sub64(0, lo, 0)
	nhi, _ := bits.Sub64(0, hi, b)
	q := div128(nhi, nlo, c)
	_, r := bits.Div64(0, nhi, c)
	_, rem := bits.Div64(r, nlo, c)
	if rem != 0 {
		q++
	}
	return -int64(q)
}
