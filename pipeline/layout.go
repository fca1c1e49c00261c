package pipeline

import "github.com/zspool/zspool/zarr"

// RowLayout is the bookkeeping of one level's chunk rows that does not
// change from row to row: each chunk's coordinates, its shard within the
// layer and its slot apart from the dim-0 part. Every engine groups its
// chunks into shards through it, from each chunk's own coordinates.
type RowLayout struct {
	Grid      zarr.Grid
	Coords    [][]int64 // chunk coordinates in C order over dims ≥ 1, c[0] = 0
	ShardOf   []int64   // inner shard index per chunk
	InnerSlot []int64   // slot contribution of dims ≥ 1
	ByShard   [][]int   // chunk indices per inner shard, in slot order
	InnerSize int64     // Π_{d≥1} p_d
}

// NewRowLayout lays out a level's chunk rows.
func NewRowLayout(g zarr.Grid) *RowLayout {
	r := g.Rank()
	ll := &RowLayout{Grid: g, InnerSize: 1}
	extent := make([]int64, r)
	shards := make([]int64, r)
	extent[0], shards[0] = 1, 1
	for d := 1; d < r; d++ {
		extent[d] = g.Chunks(d)
		shards[d] = g.Shards(d)
		ll.InnerSize *= g.Shard[d]
	}
	ll.ByShard = make([][]int, ShardsPerLayer(g))
	_ = zarr.ForEach(extent, func(c []int64) error {
		var shard, slot int64
		for d := 1; d < r; d++ {
			shard = shard*shards[d] + c[d]/g.Shard[d]
			slot = slot*g.Shard[d] + c[d]%g.Shard[d]
		}
		i := len(ll.Coords)
		ll.Coords = append(ll.Coords, append([]int64(nil), c...))
		ll.ShardOf = append(ll.ShardOf, shard)
		ll.InnerSlot = append(ll.InnerSlot, slot)
		ll.ByShard[shard] = append(ll.ByShard[shard], i)
		return nil
	})
	return ll
}

// Slot is chunk i's index slot in chunk row (epoch) e.
func (ll *RowLayout) Slot(e int64, i int) int64 {
	return (e%ll.Grid.Shard[0])*ll.InnerSize + ll.InnerSlot[i]
}

// Group arranges a row's stored chunks by shard in slot order; stored(i)
// is chunk i's bytes, nil when absent.
func (ll *RowLayout) Group(level int, epoch int64, stored func(i int) []byte) LevelOutput {
	out := LevelOutput{Level: level, Epoch: epoch, Shards: make([]ShardOut, len(ll.ByShard))}
	for s, idx := range ll.ByShard {
		so := ShardOut{Inner: int64(s), Chunks: make([]ChunkOut, len(idx))}
		for j, i := range idx {
			so.Chunks[j] = ChunkOut{Slot: ll.Slot(epoch, i), Data: stored(i)}
		}
		out.Shards[s] = so
	}
	return out
}
