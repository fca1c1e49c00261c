package zarr_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/zspool/zspool/zarr"
)

const padByte = 0xA5 // what a chunk buffer holds before Scatter

// epochFrames is the number of frames in epoch e: chunk[0], or fewer for
// the last one.
func epochFrames(g zarr.Grid, e int64) int64 {
	return min(g.Chunk[0], g.Shape[0]-e*g.Chunk[0])
}

// naiveChunk builds chunk c of epoch e element by element: each in-bounds
// element's dense offset is computed from its array coordinates, its chunk
// offset from its in-chunk position. Out-of-bounds elements hold pad.
func naiveChunk(g zarr.Grid, c []int64, frames int64, elem int, dense []byte, pad byte) []byte {
	r := g.Rank()
	dShape := append([]int64{frames}, g.Shape[1:]...)
	out := bytes.Repeat([]byte{pad}, int(g.ChunkElems())*elem)
	x := make([]int64, r)
	for i := range g.ChunkElems() {
		rc := unravel(i, g.Chunk)
		in := rc[0] < frames
		x[0] = rc[0]
		for d := 1; d < r; d++ {
			x[d] = c[d]*g.Chunk[d] + rc[d]
			in = in && x[d] < g.Shape[d]
		}
		if in {
			do := ravel(x, dShape) * int64(elem)
			copy(out[i*int64(elem):(i+1)*int64(elem)], dense[do:do+int64(elem)])
		}
	}
	return out
}

// epochChunks lists every chunk coordinate of epoch e.
func epochChunks(g zarr.Grid, e int64) [][]int64 {
	extent := chunkCounts(g)
	extent[0] = 1
	var out [][]int64
	_ = zarr.ForEach(extent, func(c []int64) error {
		cc := append([]int64(nil), c...)
		cc[0] = e
		out = append(out, cc)
		return nil
	})
	return out
}

// checkBoxRoundTrip scatters every chunk of every epoch against the naive
// reference, then gathers them all back into a fresh dense buffer.
func checkBoxRoundTrip(t *testing.T, g zarr.Grid, elem int, rng *rand.Rand) {
	t.Helper()
	frameBytes := prod(g.Shape[1:]) * int64(elem)
	for e := range g.Chunks(0) {
		frames := epochFrames(g, e)
		dense := make([]byte, frames*frameBytes)
		for i := range dense {
			dense[i] = byte(rng.UintN(256))
		}
		back := bytes.Repeat([]byte{0x5A}, len(dense))
		for _, c := range epochChunks(g, e) {
			box := g.EpochBox(c, frames, elem)
			chunk := bytes.Repeat([]byte{padByte}, int(g.ChunkElems())*elem)
			box.Scatter(dense, chunk)
			if want := naiveChunk(g, c, frames, elem, dense, padByte); !bytes.Equal(chunk, want) {
				i := firstDiffAt(chunk, want)
				t.Fatalf("%+v elem %d epoch %d (%d frames) chunk %v: Scatter differs from the reference at chunk byte %d: %#02x, want %#02x",
					g, elem, e, frames, c, i, chunk[i], want[i])
			}
			// Gathering this chunk alone touches only its own elements.
			lone := bytes.Repeat([]byte{0x5A}, len(dense))
			box.Gather(chunk, lone)
			for i := range lone {
				x := unravel(int64(i)/int64(elem), append([]int64{frames}, g.Shape[1:]...))
				mine := true
				for d := 1; d < g.Rank(); d++ {
					mine = mine && x[d]/g.Chunk[d] == c[d]
				}
				if want := map[bool]byte{true: dense[i], false: 0x5A}[mine]; lone[i] != want {
					t.Fatalf("%+v elem %d epoch %d chunk %v: Gather wrote dense byte %d (element %v): %#02x, want %#02x",
						g, elem, e, c, i, x, lone[i], want)
				}
			}
			box.Gather(chunk, back)
		}
		if !bytes.Equal(back, dense) {
			i := firstDiffAt(back, dense)
			t.Fatalf("%+v elem %d epoch %d: Gather of all chunks differs from the epoch at byte %d", g, elem, e, i)
		}
	}
}

func firstDiffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestEpochBoxScatterThenGatherRoundTripsAgainstTheElementReference(t *testing.T) {
	grids := []struct {
		name string
		grid zarr.Grid
	}{
		{"ragged in every dim", zarr.Grid{Shape: []int64{5, 7, 9}, Chunk: []int64{2, 3, 4}, Shard: []int64{2, 2, 2}}},
		{"one frame per epoch", zarr.Grid{Shape: []int64{4, 9, 9}, Chunk: []int64{1, 3, 3}, Shard: []int64{1, 2, 2}}},
		{"rows whole in chunk and array (merged run over dim 2)", zarr.Grid{Shape: []int64{3, 10, 8}, Chunk: []int64{1, 4, 8}, Shard: []int64{1, 2, 1}}},
		{"frames whole (merged run over every inner dim)", zarr.Grid{Shape: []int64{5, 4, 8}, Chunk: []int64{2, 4, 8}, Shard: []int64{1, 1, 1}}},
		{"trailing dim whole but the next one ragged", zarr.Grid{Shape: []int64{3, 5, 6}, Chunk: []int64{2, 2, 6}, Shard: []int64{1, 2, 1}}},
		{"trailing dims whole in the chunk only (padded)", zarr.Grid{Shape: []int64{3, 5, 6}, Chunk: []int64{2, 8, 8}, Shard: []int64{1, 1, 1}}},
		{"4-D with two whole trailing dims", zarr.Grid{Shape: []int64{3, 5, 3, 4}, Chunk: []int64{2, 2, 3, 4}, Shard: []int64{1, 2, 1, 1}}},
		{"1-D", zarr.Grid{Shape: []int64{10}, Chunk: []int64{3}, Shard: []int64{2}}},
		{"1-D single chunk larger than the array", zarr.Grid{Shape: []int64{5}, Chunk: []int64{8}, Shard: []int64{1}}},
		{"chunk larger than the array in every dim", zarr.Grid{Shape: []int64{3, 2, 5}, Chunk: []int64{4, 4, 8}, Shard: []int64{1, 1, 1}}},
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range grids {
		for _, elem := range []int{1, 2, 4, 8} {
			t.Run(fmt.Sprintf("%s elem %d", tc.name, elem), func(t *testing.T) {
				checkBoxRoundTrip(t, tc.grid, elem, rng)
			})
		}
	}
}

func TestEpochBoxRoundTripsOnRandomShapesChunksAndElementSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for i := range 250 {
		g := randomGrid(rng)
		// Half the time make some trailing dims whole in the chunk, so the
		// merged-run path is exercised on random shapes too.
		if rng.IntN(2) == 0 {
			for d := g.Rank() - 1; d >= 1 && rng.IntN(3) > 0; d-- {
				g.Chunk[d] = g.Shape[d]
			}
		}
		elem := []int{1, 2, 4, 8}[rng.IntN(4)]
		t.Run(fmt.Sprintf("#%d %v %v elem %d", i, g.Shape, g.Chunk, elem), func(t *testing.T) {
			checkBoxRoundTrip(t, g, elem, rng)
		})
	}
}

func TestPaddedIsTrueExactlyWhenPartOfTheChunkLiesOutsideTheEpoch(t *testing.T) {
	g := zarr.Grid{Shape: []int64{5, 7, 8}, Chunk: []int64{2, 3, 8}, Shard: []int64{1, 1, 1}}
	for _, tc := range []struct {
		c      []int64
		frames int64
		want   bool
	}{
		{[]int64{0, 0, 0}, 2, false},
		{[]int64{0, 1, 0}, 2, false},
		{[]int64{0, 2, 0}, 2, true}, // rows 6..8 of 7
		{[]int64{2, 0, 0}, 1, true}, // last epoch holds one frame
		{[]int64{2, 2, 0}, 1, true},
	} {
		if got := g.EpochBox(tc.c, tc.frames, 2).Padded(); got != tc.want {
			t.Errorf("chunk %v with %d frames: Padded = %v, want %v", tc.c, tc.frames, got, tc.want)
		}
	}
}
