package zarr_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zspool/zspool/zarr"
)

// fixedGrids are the hand-picked tilings every grid test runs over: ragged
// chunk grids, ragged shard grids, shards of one chunk along some dims, and
// a 1-D array.
var fixedGrids = []struct {
	name string
	grid zarr.Grid
	// expectations
	chunks, shards, shardShape []int64
	slots, shardCount          int64
}{
	{
		name:       "(5,7,9) chunk (2,3,4) shard (2,2,2)",
		grid:       zarr.Grid{Shape: []int64{5, 7, 9}, Chunk: []int64{2, 3, 4}, Shard: []int64{2, 2, 2}},
		chunks:     []int64{3, 3, 3},
		shards:     []int64{2, 2, 2},
		shardShape: []int64{4, 6, 8},
		slots:      8,
		shardCount: 8,
	},
	{
		name:       "(4,9,9) chunk (1,3,3) shard (1,2,2)",
		grid:       zarr.Grid{Shape: []int64{4, 9, 9}, Chunk: []int64{1, 3, 3}, Shard: []int64{1, 2, 2}},
		chunks:     []int64{4, 3, 3},
		shards:     []int64{4, 2, 2},
		shardShape: []int64{1, 6, 6},
		slots:      4,
		shardCount: 16,
	},
	{
		name:       "(3,10,8) chunk (1,4,8) shard (1,2,1)",
		grid:       zarr.Grid{Shape: []int64{3, 10, 8}, Chunk: []int64{1, 4, 8}, Shard: []int64{1, 2, 1}},
		chunks:     []int64{3, 3, 1},
		shards:     []int64{3, 2, 1},
		shardShape: []int64{1, 8, 8},
		slots:      2,
		shardCount: 6,
	},
	{
		name:       "1-D (10) chunk (3) shard (2)",
		grid:       zarr.Grid{Shape: []int64{10}, Chunk: []int64{3}, Shard: []int64{2}},
		chunks:     []int64{4},
		shards:     []int64{2},
		shardShape: []int64{6},
		slots:      2,
		shardCount: 2,
	},
	{
		name:       "chunk larger than the array",
		grid:       zarr.Grid{Shape: []int64{3, 2}, Chunk: []int64{8, 8}, Shard: []int64{4, 3}},
		chunks:     []int64{1, 1},
		shards:     []int64{1, 1},
		shardShape: []int64{32, 24},
		slots:      12,
		shardCount: 1,
	},
	{
		name:       "everything divides evenly",
		grid:       zarr.Grid{Shape: []int64{8, 12}, Chunk: []int64{2, 3}, Shard: []int64{2, 2}},
		chunks:     []int64{4, 4},
		shards:     []int64{2, 2},
		shardShape: []int64{4, 6},
		slots:      4,
		shardCount: 4,
	},
}

// randomGrid draws a grid of 1–5 dims whose element count stays small
// enough to enumerate element by element.
func randomGrid(rng *rand.Rand) zarr.Grid {
	rank := 1 + rng.IntN(5)
	g := zarr.Grid{Shape: make([]int64, rank), Chunk: make([]int64, rank), Shard: make([]int64, rank)}
	maxSide := []int64{0, 40, 14, 8, 6, 5}[rank]
	for d := range rank {
		g.Shape[d] = 1 + rng.Int64N(maxSide)
		g.Chunk[d] = 1 + rng.Int64N(g.Shape[d]+1) // may exceed the shape
		g.Shard[d] = 1 + rng.Int64N(4)
	}
	return g
}

func ceil(a, b int64) int64 { return (a + b - 1) / b }

// unravel turns a flat C-order index into coordinates over extent.
func unravel(i int64, extent []int64) []int64 {
	c := make([]int64, len(extent))
	for d := len(extent) - 1; d >= 0; d-- {
		c[d] = i % extent[d]
		i /= extent[d]
	}
	return c
}

// ravel is the C-order flat index of c over extent.
func ravel(c, extent []int64) int64 {
	var i int64
	for d := range c {
		i = i*extent[d] + c[d]
	}
	return i
}

func prod(v []int64) int64 {
	p := int64(1)
	for _, x := range v {
		p *= x
	}
	return p
}

func TestGridCountsAndShapesFollowTheCeilingFormulas(t *testing.T) {
	for _, tc := range fixedGrids {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.grid
			if err := g.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if g.Rank() != len(tc.chunks) {
				t.Errorf("Rank = %d, want %d", g.Rank(), len(tc.chunks))
			}
			for d := range g.Shape {
				if got := g.Chunks(d); got != tc.chunks[d] {
					t.Errorf("Chunks(%d) = %d, want %d", d, got, tc.chunks[d])
				}
				if got := g.Shards(d); got != tc.shards[d] {
					t.Errorf("Shards(%d) = %d, want %d", d, got, tc.shards[d])
				}
			}
			if got := g.ShardShape(); !slices.Equal(got, tc.shardShape) {
				t.Errorf("ShardShape = %v, want %v", got, tc.shardShape)
			}
			if got := g.SlotsPerShard(); got != tc.slots {
				t.Errorf("SlotsPerShard = %d, want %d", got, tc.slots)
			}
			if got := g.ShardCount(); got != tc.shardCount {
				t.Errorf("ShardCount = %d, want %d", got, tc.shardCount)
			}
			if got, want := g.ChunkElems(), prod(g.Chunk); got != want {
				t.Errorf("ChunkElems = %d, want %d", got, want)
			}
		})
	}
}

func TestGridCountsMatchTheDefinitionOnRandomGrids(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		g := randomGrid(rng)
		shardCount := int64(1)
		for d := range g.Shape {
			tD := ceil(g.Shape[d], g.Chunk[d])
			qD := ceil(tD, g.Shard[d])
			// t_d chunks cover the shape; t_d-1 do not.
			if g.Chunks(d) != tD || tD*g.Chunk[d] < g.Shape[d] || (tD-1)*g.Chunk[d] >= g.Shape[d] {
				t.Fatalf("#%d %+v: Chunks(%d) = %d, want %d", i, g, d, g.Chunks(d), tD)
			}
			if g.Shards(d) != qD {
				t.Fatalf("#%d %+v: Shards(%d) = %d, want %d", i, g, d, g.Shards(d), qD)
			}
			if g.ShardShape()[d] != g.Shard[d]*g.Chunk[d] {
				t.Fatalf("#%d %+v: ShardShape = %v", i, g, g.ShardShape())
			}
			shardCount *= qD
		}
		if g.ShardCount() != shardCount || g.SlotsPerShard() != prod(g.Shard) {
			t.Fatalf("#%d %+v: ShardCount %d SlotsPerShard %d, want %d %d", i, g, g.ShardCount(), g.SlotsPerShard(), shardCount, prod(g.Shard))
		}
	}
}

// checkSlotsAgainstElements walks every element x of the array, derives its
// chunk, shard and slot straight from DESIGN.md and compares with Grid.
func checkSlotsAgainstElements(t *testing.T, g zarr.Grid) {
	t.Helper()
	r := g.Rank()
	seen := map[string]string{} // shard/slot → chunk, to catch collisions
	var out []int64
	for i := range prod(g.Shape) {
		x := unravel(i, g.Shape)
		c := make([]int64, r)
		sh := make([]int64, r)
		w := make([]int64, r)
		for d := range r {
			c[d] = x[d] / g.Chunk[d]
			sh[d] = c[d] / g.Shard[d]
			w[d] = c[d] % g.Shard[d]
		}
		slot := ravel(w, g.Shard)
		if got := g.Slot(c); got != slot {
			t.Fatalf("%+v: element %v chunk %v: Slot = %d, want %d", g, x, c, got, slot)
		}
		out = g.ShardOf(c, out)
		if !slices.Equal(out, sh) {
			t.Fatalf("%+v: element %v chunk %v: ShardOf = %v, want %v", g, x, c, out, sh)
		}
		k := fmt.Sprint(sh, slot)
		if prev, ok := seen[k]; ok && prev != fmt.Sprint(c) {
			t.Fatalf("%+v: chunks %s and %v share shard %v slot %d", g, prev, c, sh, slot)
		}
		seen[k] = fmt.Sprint(c)
	}
	if int64(len(seen)) != prod(chunkCounts(g)) {
		t.Fatalf("%+v: %d distinct (shard, slot) pairs, want one per chunk (%d)", g, len(seen), prod(chunkCounts(g)))
	}
}

func chunkCounts(g zarr.Grid) []int64 {
	t := make([]int64, g.Rank())
	for d := range t {
		t[d] = g.Chunks(d)
	}
	return t
}

func shardCounts(g zarr.Grid) []int64 {
	q := make([]int64, g.Rank())
	for d := range q {
		q[d] = g.Shards(d)
	}
	return q
}

func TestSlotUsesTheChunksOwnCoordinatesOnRaggedShardGrids(t *testing.T) {
	for _, tc := range fixedGrids {
		t.Run(tc.name, func(t *testing.T) { checkSlotsAgainstElements(t, tc.grid) })
	}
	t.Run("random grids", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		for range 200 {
			checkSlotsAgainstElements(t, randomGrid(rng))
		}
	})
}

func TestSlotDiffersFromAFlatChunkNumberReinterpretedOverShards(t *testing.T) {
	// The mistake DESIGN.md warns about: ravel c over t, then unravel that
	// flat number over (q, p). On (5,7,9)/(2,3,4)/(2,2,2) it must disagree
	// with Slot somewhere, or the fixtures would not guard against it.
	g := fixedGrids[0].grid
	tt, q := chunkCounts(g), shardCounts(g)
	qp := make([]int64, 0, 2*g.Rank())
	qp = append(qp, q...)
	qp = append(qp, g.Shard...)
	differs := false
	_ = zarr.ForEach(tt, func(c []int64) error {
		wrong := unravel(ravel(c, tt), qp)
		if ravel(wrong[g.Rank():], g.Shard) != g.Slot(c) {
			differs = true
		}
		return nil
	})
	if !differs {
		t.Fatal("the flat reinterpretation agrees with Slot everywhere; the fixture is not ragged")
	}
}

func checkSlotChunkInvertsSlot(t *testing.T, g zarr.Grid) {
	t.Helper()
	tt := chunkCounts(g)
	var c []int64
	var in bool
	err := zarr.ForEach(shardCounts(g), func(sh []int64) error {
		for s := range g.SlotsPerShard() {
			c, in = g.SlotChunk(sh, s, c)
			wantIn := true
			for d := range c {
				if c[d] != sh[d]*g.Shard[d]+unravel(s, g.Shard)[d] {
					return fmt.Errorf("shard %v slot %d: SlotChunk = %v", sh, s, c)
				}
				wantIn = wantIn && c[d] < tt[d]
			}
			if in != wantIn {
				return fmt.Errorf("shard %v slot %d: chunk %v in = %v, want %v (chunk grid %v)", sh, s, c, in, wantIn, tt)
			}
			if got := g.Slot(c); got != s {
				return fmt.Errorf("shard %v slot %d: Slot(SlotChunk) = %d", sh, s, got)
			}
			if got := g.ShardOf(c, nil); !slices.Equal(got, sh) {
				return fmt.Errorf("shard %v slot %d: ShardOf(SlotChunk) = %v", sh, s, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%+v: %v", g, err)
	}
	// And every chunk inside the array comes back from its own slot.
	err = zarr.ForEach(tt, func(c0 []int64) error {
		back, in := g.SlotChunk(g.ShardOf(c0, nil), g.Slot(c0), nil)
		if !in || !slices.Equal(back, c0) {
			return fmt.Errorf("chunk %v: SlotChunk(ShardOf, Slot) = %v, %v", c0, back, in)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%+v: %v", g, err)
	}
}

func TestSlotChunkIsTheInverseOfSlotAndFlagsSlotsOutsideTheArray(t *testing.T) {
	for _, tc := range fixedGrids {
		t.Run(tc.name, func(t *testing.T) { checkSlotChunkInvertsSlot(t, tc.grid) })
	}
	t.Run("random grids", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		for range 300 {
			checkSlotChunkInvertsSlot(t, randomGrid(rng))
		}
	})
	t.Run("known outside slots of (5,7,9)", func(t *testing.T) {
		g := fixedGrids[0].grid // t = (3,3,3), p = 2: shard (1,1,1) holds only chunk (2,2,2)
		inside := 0
		for s := range g.SlotsPerShard() {
			c, in := g.SlotChunk([]int64{1, 1, 1}, s, nil)
			if in {
				inside++
				if !slices.Equal(c, []int64{2, 2, 2}) || s != 0 {
					t.Errorf("slot %d: chunk %v inside", s, c)
				}
			}
		}
		if inside != 1 {
			t.Errorf("%d slots inside, want 1", inside)
		}
	})
}

func TestShardKeyIsCThenTheShardCoordinatesJoinedBySlashes(t *testing.T) {
	for _, tc := range []struct {
		shard []int64
		want  string
	}{
		{[]int64{0, 1, 2}, "c/0/1/2"},
		{[]int64{7}, "c/7"},
		{[]int64{10, 0, 123456789012}, "c/10/0/123456789012"},
		{[]int64{}, "c"},
	} {
		if got := zarr.ShardKey(tc.shard); got != tc.want {
			t.Errorf("ShardKey(%v) = %q, want %q", tc.shard, got, tc.want)
		}
	}
}

func TestForEachVisitsTheBoxInCOrderExactlyOncePerCoordinate(t *testing.T) {
	for _, extent := range [][]int64{
		{1}, {5}, {2, 3}, {3, 1, 4}, {1, 1, 1}, {2, 2, 2, 2}, {4, 3, 2, 1, 2},
	} {
		t.Run(fmt.Sprint(extent), func(t *testing.T) {
			var got [][]int64
			err := zarr.ForEach(extent, func(c []int64) error {
				got = append(got, slices.Clone(c))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			n := prod(extent)
			if int64(len(got)) != n {
				t.Fatalf("%d visits, want %d", len(got), n)
			}
			for i := range n {
				if want := unravel(i, extent); !slices.Equal(got[i], want) {
					t.Fatalf("visit %d = %v, want %v", i, got[i], want)
				}
			}
		})
	}
}

func TestForEachDoesNothingForAZeroExtent(t *testing.T) {
	for _, extent := range [][]int64{{0}, {3, 0, 2}, {2, 2, 0}, {0, 5}} {
		calls := 0
		err := zarr.ForEach(extent, func([]int64) error { calls++; return nil })
		if err != nil || calls != 0 {
			t.Errorf("ForEach(%v): %d calls, err %v; want none", extent, calls, err)
		}
	}
}

func TestForEachStopsAtTheFirstError(t *testing.T) {
	stop := errors.New("stop")
	calls := 0
	err := zarr.ForEach([]int64{3, 3}, func(c []int64) error {
		calls++
		if c[0] == 1 && c[1] == 1 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 5 {
		t.Fatalf("err %v after %d calls; want stop after 5", err, calls)
	}
}

func TestValidateRefusesMismatchedRanksAndNonPositiveSizes(t *testing.T) {
	for _, tc := range []struct {
		name string
		grid zarr.Grid
		ok   bool
	}{
		{"a valid grid", zarr.Grid{Shape: []int64{5, 7}, Chunk: []int64{2, 3}, Shard: []int64{1, 2}}, true},
		{"rank zero", zarr.Grid{}, false},
		{"chunk rank differs", zarr.Grid{Shape: []int64{5, 7}, Chunk: []int64{2}, Shard: []int64{1, 2}}, false},
		{"shard rank differs", zarr.Grid{Shape: []int64{5, 7}, Chunk: []int64{2, 3}, Shard: []int64{1, 2, 3}}, false},
		{"zero shape", zarr.Grid{Shape: []int64{0, 7}, Chunk: []int64{2, 3}, Shard: []int64{1, 2}}, false},
		{"zero chunk", zarr.Grid{Shape: []int64{5, 7}, Chunk: []int64{2, 0}, Shard: []int64{1, 2}}, false},
		{"negative shard", zarr.Grid{Shape: []int64{5, 7}, Chunk: []int64{2, 3}, Shard: []int64{-1, 2}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.grid.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
