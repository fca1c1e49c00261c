package pipeline

import (
	"context"
	"runtime"
	"sort"
	"sync"
)

// blockSize is the unit of the queue's memory: large enough that a row is
// copied and written in few pieces, small enough that a shard's piece of a
// small row wastes little.
const blockSize = 1 << 20

// blockPool is the queue's memory: at most max blocks, made on first need
// and reused for the whole conversion, so that copies neither fault in
// fresh pages nor leave garbage at the store's rate.
type blockPool struct {
	free chan []byte
	mu   sync.Mutex
	made int
	max  int
}

func newBlockPool(max int) *blockPool {
	return &blockPool{free: make(chan []byte, max), max: max}
}

func (p *blockPool) get(ctx context.Context) ([]byte, error) {
	select {
	case b := <-p.free:
		return b, nil
	default:
	}
	p.mu.Lock()
	if p.made < p.max {
		p.made++
		p.mu.Unlock()
		return make([]byte, blockSize), nil
	}
	p.mu.Unlock()
	select {
	case b := <-p.free:
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *blockPool) put(bs ...[]byte) {
	for _, b := range bs {
		p.free <- b[:blockSize]
	}
}

// copyRow copies a shard's chunks of one row, in order, into blocks; a
// large row is copied by several goroutines, each a run of whole blocks.
func copyRow(blocks [][]byte, chunks []ChunkOut, size int) {
	// starts[i] is where chunk i lands in the row.
	starts := make([]int, len(chunks)+1)
	for i, ch := range chunks {
		starts[i+1] = starts[i] + len(ch.Data)
	}
	fill := func(first, last int) { // blocks first…last-1
		lo, hi := first*blockSize, min(last*blockSize, size)
		c := sort.SearchInts(starts, lo+1) - 1
		for off := lo; off < hi; c++ {
			d := chunks[c].Data[off-starts[c]:]
			d = d[:min(len(d), hi-off)]
			for len(d) > 0 {
				n := copy(blocks[off/blockSize][off%blockSize:], d)
				d, off = d[n:], off+n
			}
		}
	}
	copiers := min(runtime.GOMAXPROCS(0), len(blocks))
	if copiers <= 1 {
		fill(0, len(blocks))
		return
	}
	per := (len(blocks) + copiers - 1) / copiers
	var wg sync.WaitGroup
	for first := 0; first < len(blocks); first += per {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fill(first, min(first+per, len(blocks)))
		}()
	}
	wg.Wait()
}
