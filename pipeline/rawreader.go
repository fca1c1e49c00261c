package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Epoch is one epoch of raw level-0 bytes read from the file.
type Epoch struct {
	Index  int64
	Frames int64
	Data   []byte
	Read   time.Duration // time spent reading it
	buf    []byte
}

// EpochReader streams a raw file epoch by epoch with large reads, one
// epoch ahead of its consumer. It holds exactly two epoch buffers, so
// memory does not depend on the file's size. A large epoch is read as
// pieces by a few goroutines at once (readAt): one stream of copies out of
// the page cache stops near 7 GB/s, below what the GPU engine takes in.
type EpochReader struct {
	out  chan Epoch
	free chan []byte
	errc chan error
	stop context.CancelFunc
}

// NewEpochReader starts reading f, which holds frames frames of frameBytes,
// at epoch first (a resumed job seeks past the shard layers already
// stored). Every epoch holds epochFrames frames but the last, which holds
// what is left.
func NewEpochReader(ctx context.Context, f *os.File, name string, first, frames, epochFrames, frameBytes int64) *EpochReader {
	return NewEpochReaderInto(ctx, f, name, first, frames, epochFrames, frameBytes, nil)
}

// NewEpochReaderInto is NewEpochReader reading into bufs (two buffers of
// at least one epoch each, e.g. an engine's pinned staging memory); nil
// allocates them.
func NewEpochReaderInto(ctx context.Context, f *os.File, name string, first, frames, epochFrames, frameBytes int64, bufs [][]byte) *EpochReader {
	ctx, cancel := context.WithCancel(ctx)
	r := &EpochReader{
		out:  make(chan Epoch, 1),
		free: make(chan []byte, 2),
		errc: make(chan error, 1),
		stop: cancel,
	}
	epochBytes := epochFrames * frameBytes
	if len(bufs) != 2 {
		bufs = [][]byte{make([]byte, epochBytes), make([]byte, epochBytes)}
	}
	for _, b := range bufs {
		r.free <- b[:epochBytes]
	}
	// The kernel reads ahead harder on a file declared sequential; a failure
	// only costs speed.
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_SEQUENTIAL)
	go r.run(ctx, f, name, first, frames, epochFrames, frameBytes)
	return r
}

func (r *EpochReader) run(ctx context.Context, f *os.File, name string, first, frames, epochFrames, frameBytes int64) {
	defer close(r.out)
	epochs := ceilDiv(frames, epochFrames)
	off := first * epochFrames * frameBytes
	readers := min(runtime.GOMAXPROCS(0), maxReaders)
	for e := first; e < epochs; e++ {
		var buf []byte
		select {
		case buf = <-r.free:
		case <-ctx.Done():
			r.errc <- ctx.Err()
			return
		}
		n := min(epochFrames, frames-e*epochFrames)
		data := buf[:n*frameBytes]
		start := time.Now()
		got, err := readAt(f, data, off, readers)
		if got < len(data) && (err == nil || errors.Is(err, io.EOF)) {
			r.errc <- badInput(fmt.Errorf("raw file %s: shrank while reading (epoch %d: %d of %d bytes at byte %d)", name, e, got, len(data), off))
			return
		}
		if err != nil && !errors.Is(err, io.EOF) {
			r.errc <- fmt.Errorf("raw file %s: epoch %d at byte %d: %w", name, e, off, err)
			return
		}
		off += int64(got)
		ep := Epoch{Index: e, Frames: n, Data: data, Read: time.Since(start), buf: buf}
		select {
		case r.out <- ep:
		case <-ctx.Done():
			r.errc <- ctx.Err()
			return
		}
	}
	r.errc <- nil
}

const (
	// readPiece is the least one reader takes at a time: large enough that
	// a disk sees big sequential requests.
	readPiece = 4 << 20
	// maxReaders bounds the reads in flight for one epoch. More are slower
	// where the reads share the cores with the rest of the path: on the
	// 16-core H100 host the GPU convert of 16 GiB to tmpfs took 9.2-9.8
	// GiB/s with 8, 8.4-9.1 with 12 and 8.0-8.6 with 16 (four alternating
	// rounds).
	maxReaders = 8
)

// readAt fills data from f at off with up to readers concurrent ReadAt
// calls of readPiece-sized pieces. Like ReadAt it returns how much of data
// was filled before the first short piece, and the error that stopped it.
func readAt(f *os.File, data []byte, off int64, readers int) (int, error) {
	pieces := (len(data) + readPiece - 1) / readPiece
	if pieces <= 1 || readers <= 1 {
		return f.ReadAt(data, off)
	}
	readers = min(readers, pieces)
	got := make([]int, pieces)
	errs := make([]error, pieces)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= pieces {
					return
				}
				lo, hi := i*readPiece, min((i+1)*readPiece, len(data))
				got[i], errs[i] = f.ReadAt(data[lo:hi], off+int64(lo))
			}
		}()
	}
	wg.Wait()
	n := 0
	for i := range pieces {
		n += got[i]
		if want := min(readPiece, len(data)-i*readPiece); got[i] < want || errs[i] != nil {
			return n, errs[i]
		}
	}
	return n, nil
}

// Next returns the next epoch, or ok=false at the end (then Err says why).
func (r *EpochReader) Next() (Epoch, bool) {
	e, ok := <-r.out
	return e, ok
}

// Release hands an epoch's buffer back for the reader to refill.
func (r *EpochReader) Release(e Epoch) {
	if e.buf != nil {
		r.free <- e.buf
	}
}

// Err is the reason reading stopped: nil after the last epoch.
func (r *EpochReader) Err() error {
	return <-r.errc
}

// Close stops the reader and waits for it to let go of the file.
func (r *EpochReader) Close() {
	r.stop()
	for range r.out {
	}
}
