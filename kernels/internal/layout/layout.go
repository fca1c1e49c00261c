// Package layout computes the parameters of the GPU engine's kernels from a
// level's grid: the host half of kernels/layout.cuh. It is plain Go so the
// default build, and machines without CUDA, can check it.
package layout

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/zspool/zspool/zarr"
)

// MaxRank is the most dims the kernels handle (ZS_MAX_RANK).
const MaxRank = 8

// EncodedSize is sizeof(zs_params).
const EncodedSize = 4*2 + 8*6 + 8*MaxRank*6 + 8*4 + 8*2 + 8*MaxRank*2

// narrowLimit bounds the 32-bit kernels: batch, chunk layout and every
// index in between stay below it, and so does an index plus one
// grid-stride step.
const narrowLimit = 1 << 31

// Div32 divides 32-bit numbers by a fixed divisor d ≥ 1 with a multiply
// and a shift: q = (umulhi(n, Mul) + n) >> Shift, the sum in 64 bits.
type Div32 struct {
	Mul, Shift uint32
}

// NewDiv32 prepares division by d, which must be at least 1.
func NewDiv32(d uint32) Div32 {
	l := uint32(bits.Len32(d - 1)) // ceil(log2 d)
	// m = floor(2^32 (2^l − d) / d) + 1 < 2^32, since 2^l − d < d.
	m := (uint64(1)<<32)*((uint64(1)<<l)-uint64(d))/uint64(d) + 1
	return Div32{Mul: uint32(m), Shift: l}
}

// Div is n / d, exactly as the kernels compute it.
func (d Div32) Div(n uint32) uint32 {
	hi := uint32((uint64(n) * uint64(d.Mul)) >> 32)
	return uint32((uint64(hi) + uint64(n)) >> d.Shift)
}

// Params is zs_params: one batch shape's kernel parameters. Dims are
// reversed (j = 0 the fastest, in bytes; j = Rank−1 the append dim).
type Params struct {
	Rank, Vec                                                      uint32
	TotalVecs, RowVecs, RowsPerChunk, ChunkBytes, NChunks, InBytes uint64
	Shape, Chunk, Grid, Stride, Shard, Shards                      [MaxRank]uint64
	InnerSlots, Epochs, Keys, GatherVec                            uint64
	DRow, DRPC                                                     Div32
	DChunk, DGrid                                                  [MaxRank]Div32

	// Wide says the batch needs the 64-bit kernels. Not sent to the GPU.
	Wide bool
}

// New lays out a batch of frames frames (any count; chunk rows past the
// first are further epochs) of a level with grid g and elem-byte elements.
func New(g zarr.Grid, frames int64, elem int) (*Params, error) {
	r := g.Rank()
	if r < 1 || r > MaxRank {
		return nil, fmt.Errorf("%d dims: the GPU kernels handle 1 to %d", r, MaxRank)
	}
	if frames < 1 || elem < 1 {
		return nil, fmt.Errorf("batch of %d frames of %d-byte elements", frames, elem)
	}
	p := &Params{Rank: uint32(r)}
	e := uint64(elem)
	for d := range r {
		j := r - 1 - d
		s, n := uint64(g.Shape[d]), uint64(g.Chunk[d])
		if d == 0 {
			s = uint64(frames)
		}
		if j == 0 {
			s, n = s*e, n*e
		}
		p.Shape[j], p.Chunk[j], p.Shard[j] = s, n, uint64(g.Shard[d])
		p.Grid[j] = ceilDiv(s, n)
		p.Shards[j] = ceilDiv(p.Grid[j], p.Shard[j])
	}
	ok := true
	p.ChunkBytes, p.RowsPerChunk, p.NChunks, p.InBytes = 1, 1, 1, 1
	p.InnerSlots = 1
	layers := uint64(1)
	for j := range r {
		if p.Stride[j] = p.InBytes; j == 0 {
			p.Stride[j] = 1
		}
		p.InBytes, ok = mul(p.InBytes, p.Shape[j], ok)
		p.ChunkBytes, ok = mul(p.ChunkBytes, p.Chunk[j], ok)
		p.NChunks, ok = mul(p.NChunks, p.Grid[j], ok)
		if j > 0 {
			p.RowsPerChunk *= p.Chunk[j]
		}
		if j < r-1 {
			p.InnerSlots, ok = mul(p.InnerSlots, p.Shard[j], ok)
			layers, ok = mul(layers, p.Shards[j], ok)
		}
	}
	p.Epochs = p.Grid[r-1]
	p.Keys, ok = mul(layers, p.Epochs, ok)
	p.Keys, ok = mul(p.Keys, p.InnerSlots, ok)
	out, ok := mul(p.NChunks, p.ChunkBytes, ok)
	if !ok || out > math.MaxInt64 {
		return nil, fmt.Errorf("batch of %d frames: its chunk layout overflows 64 bits", frames)
	}
	// The widest access that keeps every row start aligned: rows start at
	// multiples of the chunk row (N_0) in the layout and of the array row
	// (S_0) in the raw batch.
	for _, v := range []uint64{16, 8, 4, 2, 1} {
		if p.Chunk[0]%v == 0 && (r == 1 || p.Shape[0]%v == 0) {
			p.Vec = uint32(v)
			break
		}
	}
	for _, v := range []uint64{16, 8, 4, 2, 1} {
		if p.ChunkBytes%v == 0 {
			p.GatherVec = v
			break
		}
	}
	p.RowVecs = p.Chunk[0] / uint64(p.Vec)
	p.TotalVecs = out / uint64(p.Vec)
	p.Wide = out >= narrowLimit || p.InBytes >= narrowLimit
	if !p.Wide {
		p.DRow, p.DRPC = NewDiv32(uint32(p.RowVecs)), NewDiv32(uint32(p.RowsPerChunk))
		for j := range r {
			p.DChunk[j], p.DGrid[j] = NewDiv32(uint32(p.Chunk[j])), NewDiv32(uint32(p.Grid[j]))
		}
	}
	return p, nil
}

// OutBytes is the size of the batch's chunk layout.
func (p *Params) OutBytes() uint64 { return p.NChunks * p.ChunkBytes }

// Encode serialises p as zs_params, little endian.
func (p *Params) Encode() []byte {
	b := make([]byte, 0, EncodedSize)
	le := binary.LittleEndian
	b = le.AppendUint32(b, p.Rank)
	b = le.AppendUint32(b, p.Vec)
	for _, v := range []uint64{p.TotalVecs, p.RowVecs, p.RowsPerChunk, p.ChunkBytes, p.NChunks, p.InBytes} {
		b = le.AppendUint64(b, v)
	}
	for _, a := range []*[MaxRank]uint64{&p.Shape, &p.Chunk, &p.Grid, &p.Stride, &p.Shard, &p.Shards} {
		for _, v := range a {
			b = le.AppendUint64(b, v)
		}
	}
	for _, v := range []uint64{p.InnerSlots, p.Epochs, p.Keys, p.GatherVec} {
		b = le.AppendUint64(b, v)
	}
	for _, d := range []Div32{p.DRow, p.DRPC} {
		b = le.AppendUint32(le.AppendUint32(b, d.Mul), d.Shift)
	}
	for _, a := range []*[MaxRank]Div32{&p.DChunk, &p.DGrid} {
		for _, d := range a {
			b = le.AppendUint32(le.AppendUint32(b, d.Mul), d.Shift)
		}
	}
	return b
}

func ceilDiv(a, b uint64) uint64 { return (a + b - 1) / b }

// mul multiplies, reporting overflow through ok (sticky: once false,
// stays false).
func mul(a, b uint64, ok bool) (uint64, bool) {
	hi, lo := bits.Mul64(a, b)
	return lo, ok && hi == 0
}
