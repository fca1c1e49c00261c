// Package zarr owns the on-storage format zspool writes: the tiling math of a
// sharded Zarr v3 array, the sharding index, the array and OME group
// metadata documents, and a reader that opens a dataset back through any
// Store. The writer (package pipeline) and the reader share this one
// definition so they cannot drift apart.
package zarr

import (
	"fmt"
	"strconv"
	"strings"
)

// Grid is the tiling of one array: for each dim its size s, chunk n and
// chunks per shard p. Everything else (chunk counts t, shard counts q, slots)
// derives from these.
type Grid struct {
	Shape []int64 // s_d, elements
	Chunk []int64 // n_d, elements per chunk
	Shard []int64 // p_d, chunks per shard
}

// Rank is the number of dims.
func (g Grid) Rank() int { return len(g.Shape) }

// Chunks is t_d = ceil(s_d / n_d).
func (g Grid) Chunks(d int) int64 { return ceilDiv(g.Shape[d], g.Chunk[d]) }

// Shards is q_d = ceil(t_d / p_d).
func (g Grid) Shards(d int) int64 { return ceilDiv(g.Chunks(d), g.Shard[d]) }

// ChunkElems is the element count of one (padded) chunk.
func (g Grid) ChunkElems() int64 { return product(g.Chunk) }

// SlotsPerShard is Π p_d, the length of every shard's index.
func (g Grid) SlotsPerShard() int64 { return product(g.Shard) }

// ShardShape is the shard extent in elements, p_d × n_d: the array's
// chunk_grid in zarr.json.
func (g Grid) ShardShape() []int64 {
	out := make([]int64, len(g.Shape))
	for d := range out {
		out[d] = g.Shard[d] * g.Chunk[d]
	}
	return out
}

// ShardCount is the number of shard objects, Π q_d.
func (g Grid) ShardCount() int64 {
	n := int64(1)
	for d := range g.Shape {
		n *= g.Shards(d)
	}
	return n
}

// Slot is the index slot of chunk c inside its shard: the C-order ravel of
// w_d = c_d % p_d over p. It uses the chunk's own coordinates, which is what
// keeps ragged shard grids right.
func (g Grid) Slot(c []int64) int64 {
	var s int64
	for d := range c {
		s = s*g.Shard[d] + c[d]%g.Shard[d]
	}
	return s
}

// ShardOf is g_d = c_d / p_d.
func (g Grid) ShardOf(c []int64, out []int64) []int64 {
	out = out[:0]
	for d := range c {
		out = append(out, c[d]/g.Shard[d])
	}
	return out
}

// SlotChunk is the inverse of Slot for shard g: the chunk coordinates of
// slot s, and whether that chunk lies inside the array.
func (g Grid) SlotChunk(shard []int64, s int64, out []int64) ([]int64, bool) {
	out = append(out[:0], make([]int64, len(g.Shape))...)
	in := true
	for d := len(g.Shape) - 1; d >= 0; d-- {
		w := s % g.Shard[d]
		s /= g.Shard[d]
		out[d] = shard[d]*g.Shard[d] + w
		if out[d] >= g.Chunks(d) {
			in = false
		}
	}
	return out, in
}

// ShardKey is `c/<g_0>/<g_1>/…`, relative to the array's path.
func ShardKey(shard []int64) string {
	var b strings.Builder
	b.WriteString("c")
	for _, v := range shard {
		b.WriteByte('/')
		b.WriteString(strconv.FormatInt(v, 10))
	}
	return b.String()
}

// ForEach calls fn with every coordinate of the box [0, extent) in C order.
// fn must not keep the slice.
func ForEach(extent []int64, fn func(c []int64) error) error {
	c := make([]int64, len(extent))
	for _, e := range extent {
		if e <= 0 {
			return nil
		}
	}
	for {
		if err := fn(c); err != nil {
			return err
		}
		d := len(c) - 1
		for ; d >= 0; d-- {
			c[d]++
			if c[d] < extent[d] {
				break
			}
			c[d] = 0
		}
		if d < 0 {
			return nil
		}
	}
}

// Validate checks that the grid is usable: equal ranks, positive sizes.
func (g Grid) Validate() error {
	if len(g.Shape) == 0 || len(g.Chunk) != len(g.Shape) || len(g.Shard) != len(g.Shape) {
		return fmt.Errorf("grid: ranks differ (shape %d, chunk %d, shard %d)", len(g.Shape), len(g.Chunk), len(g.Shard))
	}
	for d := range g.Shape {
		if g.Shape[d] < 1 || g.Chunk[d] < 1 || g.Shard[d] < 1 {
			return fmt.Errorf("grid: dim %d: shape %d, chunk %d, shard %d must all be ≥ 1", d, g.Shape[d], g.Chunk[d], g.Shard[d])
		}
	}
	return nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func product(v []int64) int64 {
	p := int64(1)
	for _, x := range v {
		p *= x
	}
	return p
}
