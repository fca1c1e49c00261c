package zarr

// Box copies move one chunk's elements between an epoch-dense buffer (C
// order, true shape, dim 0 holding only the epoch's frames) and a padded
// chunk buffer (C order, full chunk shape). The writer scatters with it and
// the reader gathers with it, so both sides use the same index math.
//
// Runs are merged across trailing dims that are whole in the chunk and in
// the array, so a chunk spanning full rows copies one run per outer index
// instead of one per row.

// ChunkBox describes where chunk c of an epoch lies.
type ChunkBox struct {
	dense  []int64 // dense dims: frames in epoch, then s_1…
	chunk  []int64 // n_d
	origin []int64 // element origin in the dense epoch
	extent []int64 // in-bounds extent (≤ chunk)
	elem   int64
}

// EpochBox returns the box of chunk c (c[0] ignored: the epoch is dim 0's
// chunk row) inside an epoch holding frames frames.
func (g Grid) EpochBox(c []int64, frames int64, elem int) ChunkBox {
	r := len(g.Shape)
	b := ChunkBox{
		dense:  make([]int64, r),
		chunk:  g.Chunk,
		origin: make([]int64, r),
		extent: make([]int64, r),
		elem:   int64(elem),
	}
	b.dense[0] = frames
	b.extent[0] = frames
	for d := 1; d < r; d++ {
		b.dense[d] = g.Shape[d]
		b.origin[d] = c[d] * g.Chunk[d]
		b.extent[d] = min(g.Chunk[d], g.Shape[d]-b.origin[d])
	}
	return b
}

// Padded reports whether part of the chunk lies outside the array, so the
// chunk buffer must be filled before the in-bounds part is copied in.
func (b ChunkBox) Padded() bool {
	for d := range b.extent {
		if b.extent[d] < b.chunk[d] {
			return true
		}
	}
	return false
}

// Scatter copies the chunk's in-bounds elements from dense into chunk.
// Padding in chunk is left as it was.
func (b ChunkBox) Scatter(dense, chunk []byte) { b.walk(dense, chunk, true) }

// Gather copies the chunk's in-bounds elements from chunk into dense.
func (b ChunkBox) Gather(chunk, dense []byte) { b.walk(dense, chunk, false) }

func (b ChunkBox) walk(dense, chunk []byte, toChunk bool) {
	r := len(b.extent)
	// k is the dim at which one contiguous run starts: every dim after it is
	// whole in both the dense array and the chunk.
	k := r - 1
	run := b.extent[r-1] * b.elem
	for k > 0 && b.extent[k] == b.chunk[k] && b.extent[k] == b.dense[k] {
		k--
		run *= b.extent[k]
	}
	denseStride := make([]int64, r)
	chunkStride := make([]int64, r)
	ds, cs := b.elem, b.elem
	for d := r - 1; d >= 0; d-- {
		denseStride[d], chunkStride[d] = ds, cs
		ds *= b.dense[d]
		cs *= b.chunk[d]
	}
	var base int64
	for d := range r {
		base += b.origin[d] * denseStride[d]
	}
	idx := make([]int64, k)
	for {
		do, co := base, int64(0)
		for d := 0; d < k; d++ {
			do += idx[d] * denseStride[d]
			co += idx[d] * chunkStride[d]
		}
		if toChunk {
			copy(chunk[co:co+run], dense[do:do+run])
		} else {
			copy(dense[do:do+run], chunk[co:co+run])
		}
		d := k - 1
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < b.extent[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}
