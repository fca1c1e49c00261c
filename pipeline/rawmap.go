package pipeline

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// EpochMapper is an EpochSource that maps each epoch of the raw file into
// memory instead of copying it out of the page cache: the CPU engine
// scatters its chunks straight from the cached pages, so the file's bytes
// are copied once (into a worker's chunk) instead of twice. On a 16-core
// H100 host the read's copy was 5 to 6 of the 47 to 50 CPU-seconds of an
// 8 GiB convert.
//
// Two epochs are mapped at most, as EpochReader holds two buffers, and an
// epoch's pages are faulted in when it is mapped (MAP_POPULATE), by the
// mapper's goroutine, one epoch ahead of its consumer.
//
// A mapping faults if the file shrinks under it. The consumers read the
// epoch inside Guard, which turns such a fault into an error; a file that
// shrank before an epoch was mapped is caught by the size check, as
// EpochReader catches a short read.
type EpochMapper struct {
	out  chan Epoch
	free chan struct{}
	errc chan error
	stop context.CancelFunc
	done chan struct{}

	mu     sync.Mutex
	mapped map[*byte][]byte // every mapping not yet unmapped, by its first byte
}

// NewEpochMapper starts mapping f, which holds frames frames of
// frameBytes, from epoch first on; every epoch holds epochFrames frames
// but the last. It fails, mapping nothing, where f cannot be mapped (some
// FUSE and network filesystems): EpochReader reads such files.
func NewEpochMapper(ctx context.Context, f *os.File, name string, first, frames, epochFrames, frameBytes int64) (*EpochMapper, error) {
	probe, err := unix.Mmap(int(f.Fd()), 0, os.Getpagesize(), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("raw file %s: cannot be mapped: %w", name, err)
	}
	_ = unix.Munmap(probe)
	ctx, cancel := context.WithCancel(ctx)
	m := &EpochMapper{
		out:    make(chan Epoch, 1),
		free:   make(chan struct{}, 2),
		errc:   make(chan error, 1),
		stop:   cancel,
		done:   make(chan struct{}),
		mapped: make(map[*byte][]byte),
	}
	m.free <- struct{}{}
	m.free <- struct{}{}
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_SEQUENTIAL)
	go m.run(ctx, f, name, first, frames, epochFrames, frameBytes)
	return m, nil
}

func (m *EpochMapper) run(ctx context.Context, f *os.File, name string, first, frames, epochFrames, frameBytes int64) {
	defer close(m.done)
	defer close(m.out)
	page := int64(os.Getpagesize())
	for e := first; e < ceilDiv(frames, epochFrames); e++ {
		select {
		case <-m.free:
		case <-ctx.Done():
			m.errc <- ctx.Err()
			return
		}
		n := min(epochFrames, frames-e*epochFrames)
		off, size := e*epochFrames*frameBytes, n*frameBytes
		start := time.Now()
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			m.errc <- fmt.Errorf("raw file %s: %w", name, err)
			return
		}
		if st.Size < off+size {
			m.errc <- badInput(fmt.Errorf("raw file %s: shrank while reading (epoch %d: %d of %d bytes at byte %d)",
				name, e, max(st.Size-off, 0), size, off))
			return
		}
		// mmap wants a page-aligned offset: the mapping starts at the page
		// that holds the epoch's first byte.
		lead := off % page
		mem, err := unix.Mmap(int(f.Fd()), off-lead, int(lead+size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			m.errc <- fmt.Errorf("raw file %s: mapping epoch %d at byte %d: %w", name, e, off, err)
			return
		}
		m.mu.Lock()
		m.mapped[&mem[0]] = mem
		m.mu.Unlock()
		// The next epoch's reads go to the disk now, in large requests,
		// where a file is not cached: populating it later then waits for
		// them instead of reading page by page. Cached pages cost a look-up.
		_ = unix.Fadvise(int(f.Fd()), off+size, epochFrames*frameBytes, unix.FADV_WILLNEED)
		ep := Epoch{Index: e, Frames: n, Data: mem[lead:], Read: time.Since(start), buf: mem}
		select {
		case m.out <- ep:
		case <-ctx.Done():
			m.unmap(mem)
			m.errc <- ctx.Err()
			return
		}
	}
	m.errc <- nil
}

// Next returns the next epoch, or ok=false at the end (then Err says why).
func (m *EpochMapper) Next() (Epoch, bool) {
	e, ok := <-m.out
	return e, ok
}

// Release unmaps an epoch: its bytes must not be read after.
func (m *EpochMapper) Release(e Epoch) {
	if e.buf != nil && m.unmap(e.buf) {
		m.free <- struct{}{}
	}
}

// unmap unmaps mem unless Close did already, and says whether it did.
func (m *EpochMapper) unmap(mem []byte) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mapped[&mem[0]]; !ok {
		return false
	}
	delete(m.mapped, &mem[0])
	_ = unix.Munmap(mem)
	return true
}

// Err is the reason mapping stopped: nil after the last epoch.
func (m *EpochMapper) Err() error {
	return <-m.errc
}

// Close stops the mapper and unmaps every epoch still mapped, released or
// not: its consumers must be done with them (Convert settles the engine
// first).
func (m *EpochMapper) Close() {
	m.stop()
	for e := range m.out {
		m.Release(e)
	}
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, mem := range m.mapped {
		_ = unix.Munmap(mem)
		delete(m.mapped, k)
	}
}

// Guard runs read, which reads mapped file bytes, and returns the fault
// that a file shrunk under its mapping raises there as an InputError
// instead of a crash; any other panic goes on.
func Guard(read func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if re, ok := r.(runtime.Error); ok {
			if f, fault := re.(interface{ Addr() uintptr }); fault {
				err = badInput(fmt.Errorf("the raw file changed while it was being read (did it shrink?): its mapped page at %#x is gone", f.Addr()))
				return
			}
		}
		panic(r)
	}()
	read()
	return nil
}
