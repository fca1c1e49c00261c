// Package reference computes what the GPU kernels must produce, the CPU
// engine's way: chunks cut out of the raw batch by zarr's ChunkBox (the
// code the CPU engine and the reader use) and keyed by pipeline.RowLayout.
// Tests of the kernels, on the GPU and in the host simulation, compare
// against it.
package reference

import (
	"bytes"
	"math/rand/v2"

	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zarr"
)

// Batch is the reference result for one raw batch.
type Batch struct {
	Layout  []byte   // chunk after chunk, C order over (epoch, inner chunk)
	NonFill []bool   // per chunk: holds a non-zero byte
	Keys    []uint64 // per chunk: (inner shard, epoch, inner slot) raveled
	NKeys   uint64
	Offsets []uint64 // per key, exclusive prefix sum of stored sizes, plus the total
	Shard   []byte   // present chunks in key order
}

// Scatter lays out a batch of frames frames of a level with grid g.
func Scatter(g zarr.Grid, frames int64, elem int, raw []byte) *Batch {
	ll := pipeline.NewRowLayout(g)
	n0 := g.Chunk[0]
	epochs := (frames + n0 - 1) / n0
	inner := int64(len(ll.Coords))
	cb := g.ChunkElems() * int64(elem)
	frameBytes := int64(elem)
	for d := 1; d < g.Rank(); d++ {
		frameBytes *= g.Shape[d]
	}
	b := &Batch{
		Layout:  make([]byte, epochs*inner*cb),
		NonFill: make([]bool, epochs*inner),
		Keys:    make([]uint64, epochs*inner),
		NKeys:   uint64(pipeline.ShardsPerLayer(g)) * uint64(epochs) * uint64(ll.InnerSize),
	}
	zero := make([]byte, cb)
	for e := range epochs {
		ef := min(n0, frames-e*n0)
		data := raw[e*n0*frameBytes : (e*n0+ef)*frameBytes]
		for i, c := range ll.Coords {
			k := e*inner + int64(i)
			buf := b.Layout[k*cb : (k+1)*cb]
			g.EpochBox(c, ef, elem).Scatter(data, buf)
			b.NonFill[k] = !bytes.Equal(buf, zero)
			b.Keys[k] = (uint64(ll.ShardOf[i])*uint64(epochs)+uint64(e))*uint64(ll.InnerSize) + uint64(ll.InnerSlot[i])
		}
	}
	b.aggregate(cb)
	return b
}

// aggregate fills Offsets and Shard from Layout, NonFill and Keys.
func (b *Batch) aggregate(cb int64) {
	sizes := make([]uint64, b.NKeys)
	chunkOf := make([]int, b.NKeys)
	for k, key := range b.Keys {
		chunkOf[key] = k
		if b.NonFill[k] {
			sizes[key] = uint64(cb)
		}
	}
	b.Offsets = make([]uint64, b.NKeys+1)
	for key, s := range sizes {
		b.Offsets[key+1] = b.Offsets[key] + s
		if s > 0 {
			k := int64(chunkOf[key])
			b.Shard = append(b.Shard, b.Layout[k*cb:(k+1)*cb]...)
		}
	}
}

// Raw makes a random raw batch of n bytes in which some stretches are
// zero, so some chunks come out all fill (absent) and others partly so.
func Raw(rng *rand.Rand, n int64) []byte {
	raw := make([]byte, n)
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	for range rng.IntN(4) {
		if n == 0 {
			break
		}
		lo := rng.Int64N(n)
		hi := lo + rng.Int64N(n-lo) + 1
		clear(raw[lo:hi])
	}
	return raw
}

// Shape is a test case: a level's grid, its element size and the frames in
// the batch.
type Shape struct {
	Name   string
	Grid   zarr.Grid
	Elem   int
	Frames int64
}

// IssueShapes are the CPU-pipeline issue's shapes (size / chunk / chunks
// per shard), each as one full first epoch.
func IssueShapes() []Shape {
	mk := func(name string, elem int, s, c, p []int64) Shape {
		return Shape{Name: name, Grid: zarr.Grid{Shape: s, Chunk: c, Shard: p}, Elem: elem, Frames: min(c[0], s[0])}
	}
	return []Shape{
		mk("ragged_everywhere", 2, []int64{5, 7, 9}, []int64{2, 3, 4}, []int64{2, 2, 2}),
		mk("inner_not_multiple", 1, []int64{3, 10, 8}, []int64{1, 4, 8}, []int64{1, 2, 1}),
		mk("grid_not_multiple_of_shard", 4, []int64{4, 9, 9}, []int64{1, 3, 3}, []int64{1, 2, 2}),
		mk("four_d_channels", 2, []int64{64, 3, 256, 256}, []int64{16, 1, 64, 64}, []int64{2, 3, 2, 2}),
		mk("one_element", 8, []int64{1, 1, 1}, []int64{1, 1, 1}, []int64{1, 1, 1}),
		mk("one_d", 2, []int64{1000003}, []int64{4096}, []int64{16}),
	}
}

// RandomShape draws a shape of 1 to 5 dims, ragged more often than not,
// with an element size of 1, 2, 4 or 8 bytes and a batch of one to three
// epochs, the last often short. It stays under a few MB of raw data.
func RandomShape(rng *rand.Rand) Shape {
	r := 1 + rng.IntN(5)
	g := zarr.Grid{Shape: make([]int64, r), Chunk: make([]int64, r), Shard: make([]int64, r)}
	budget := int64(1 << 16) // elements of one frame, roughly
	for d := range r {
		var s int64
		if d == 0 {
			s = 1 + rng.Int64N(40)
		} else {
			limit := max(1, min(300, budget))
			s = 1 + rng.Int64N(limit)
			budget /= s
		}
		c := 1 + rng.Int64N(s)
		if d == 0 && r == 1 {
			s = 1 + rng.Int64N(100000)
			c = 1 + rng.Int64N(min(s, 5000))
		}
		t := (s + c - 1) / c
		g.Shape[d], g.Chunk[d], g.Shard[d] = s, c, 1+rng.Int64N(t)
	}
	elem := []int{1, 2, 4, 8}[rng.IntN(4)]
	sh := Shape{Name: "random", Grid: g, Elem: elem, Frames: 1 + rng.Int64N(3*g.Chunk[0])}
	sh.Frames = min(sh.Frames, max(1, (4<<20)/sh.FrameBytes()))
	return sh
}

// FrameBytes is the raw size of one frame (one step along dim 0).
func (s Shape) FrameBytes() int64 {
	n := int64(s.Elem)
	for d := 1; d < s.Grid.Rank(); d++ {
		n *= s.Grid.Shape[d]
	}
	return n
}
