package layout

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/zspool/zspool/zarr"
)

// Element kinds and methods, reduce.cuh's ZS_* numbers.
const (
	KindU8 = iota
	KindI8
	KindU16
	KindI16
	KindU32
	KindI32
	KindU64
	KindI64
	KindF32
	KindF64
	Kinds
)

const (
	MethodMean = iota
	MethodMin
	MethodMax
	MethodDecimate
	Methods
)

// ReduceEncodedSize is sizeof(zs_reduce_params).
const ReduceEncodedSize = 8*7 + 8*MaxRank*5 + 8*MaxRank

// Kind is the kernels' number for a dtype.
func Kind(t zarr.DType) (int, error) {
	for k, name := range []zarr.DType{"uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64"} {
		if t == name {
			return k, nil
		}
	}
	return 0, fmt.Errorf("dtype %q has no pyramid kernel", t)
}

// Method is the kernels' number for a multiscale method ("" is mean).
func Method(m string) (int, error) {
	switch m {
	case "", "mean":
		return MethodMean, nil
	case "min":
		return MethodMin, nil
	case "max":
		return MethodMax, nil
	case "decimate":
		return MethodDecimate, nil
	}
	return 0, fmt.Errorf("multiscale.method %q has no pyramid kernel", m)
}

// Reduce is zs_reduce_params: how one pyramid level's frames are reduced
// from the frames of the level above. Inner dims are dims ≥ 1 in C order.
type Reduce struct {
	Rank, Swap, Halved, Narrow, OutElems, InFrame, OutFrame uint64
	InShape, OutShape, InStride, Half, HStride              [MaxRank]uint64
	DOut                                                    [MaxRank]Div32

	// Kind and Method pick the kernel. Not sent to the GPU.
	Kind, Method int
}

// NewReduce lays out the reduction of frames of inner shape in to frames
// of inner shape out, half[d] saying which inner dims are halved, for
// elem-byte elements of a kind, a method and a byte order.
func NewReduce(in, out []int64, half []bool, elem, kind, method int, bigEndian bool) (*Reduce, error) {
	k := len(in)
	if k > MaxRank-1 || len(out) != k || len(half) != k {
		return nil, fmt.Errorf("reduce of %d inner dims into %d (%d halving flags): the kernels handle up to %d", k, len(out), len(half), MaxRank-1)
	}
	r := &Reduce{Rank: uint64(k), Kind: kind, Method: method}
	if bigEndian {
		r.Swap = 1
	}
	stride := uint64(elem)
	r.OutElems = 1
	for d := k - 1; d >= 0; d-- {
		want := in[d]
		if half[d] {
			want = (in[d] + 1) / 2
		}
		if in[d] < 1 || out[d] != want {
			return nil, fmt.Errorf("reduce: inner dim %d of size %d cannot become %d (halved %v)", d, in[d], out[d], half[d])
		}
		r.InShape[d], r.OutShape[d], r.InStride[d] = uint64(in[d]), uint64(out[d]), stride
		stride *= uint64(in[d])
		r.OutElems *= uint64(out[d])
		if half[d] {
			r.Half[d] = 1
			r.HStride[r.Halved] = r.InStride[d]
			r.Halved++
		}
	}
	r.InFrame = stride
	r.OutFrame = r.OutElems * uint64(elem)
	if r.OutElems < math.MaxUint32 {
		r.Narrow = 1
		for d := range k {
			r.DOut[d] = NewDiv32(uint32(r.OutShape[d]))
		}
	}
	return r, nil
}

// Encode serialises r as zs_reduce_params, little endian.
func (r *Reduce) Encode() []byte {
	b := make([]byte, 0, ReduceEncodedSize)
	le := binary.LittleEndian
	for _, v := range []uint64{r.Rank, r.Swap, r.Halved, r.Narrow, r.OutElems, r.InFrame, r.OutFrame} {
		b = le.AppendUint64(b, v)
	}
	for _, a := range []*[MaxRank]uint64{&r.InShape, &r.OutShape, &r.InStride, &r.Half, &r.HStride} {
		for _, v := range a {
			b = le.AppendUint64(b, v)
		}
	}
	for _, d := range r.DOut {
		b = le.AppendUint32(le.AppendUint32(b, d.Mul), d.Shift)
	}
	return b
}
