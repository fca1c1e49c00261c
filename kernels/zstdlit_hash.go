//go:build cuda

package kernels

import (
	"fmt"

	"gorgonia.org/cu"
)

// litHasher is where the chunks' XXH64 (zstd's optional Content_Checksum)
// is worked out: a stream beside the one that runs the match kernels. The
// hash reads nothing but the source, and its four serial chains a chunk
// keep a few SMs busy for about 2.3 ms a GiB whatever the batch; queued on
// the compute stream after the encode, that time was added to every batch
// (the kernels with the checksum 57.3 GB/s against 65.1 without, dim
// frames at level 1, H200). On a stream of its own it runs while the
// seeds and the parse do, and the encode's stream waits for it only
// before the checksums are written.
type litHasher struct {
	stream cu.Stream
	// forked is recorded on the compute stream where the batch's source
	// is ready; done on the hashing stream once its hashes are.
	forked, done cu.Event
}

// newLitHasher makes the stream and its two events. On the device
// goroutine.
func newLitHasher() (*litHasher, error) {
	h := &litHasher{}
	var err error
	if h.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return nil, fmt.Errorf("create the zstd checksum's stream: %w", err)
	}
	for _, ev := range []*cu.Event{&h.forked, &h.done} {
		if *ev, err = cu.MakeEvent(cu.DisableTiming); err != nil {
			h.close()
			return nil, fmt.Errorf("create the zstd checksum's event: %w", err)
		}
	}
	return h, nil
}

// close waits for the stream's work and releases it and its events; the
// scratch's memory is freed after. As that of the scratch's buffers, a
// failure here has no one to be reported to. On the device goroutine.
func (h *litHasher) close() {
	if h.stream != (cu.Stream{}) {
		_ = h.stream.Synchronize()
		_ = h.stream.Destroy()
	}
	for _, ev := range []*cu.Event{&h.forked, &h.done} {
		if *ev != (cu.Event{}) {
			_ = cu.DestroyEvent(ev)
		}
	}
}

// litHash queues, with the checksum, the XXH64 of the nChunks chunks at
// src that nonfill marks (all when it is 0) into the scratch's hash, on
// its hashing stream and after everything s has queued so far: litWrite
// waits for it before it writes the checksums. On the device goroutine.
func (d *Device) litHash(s cu.Stream, lit *litScratch, src cu.DevicePtr, chunkBytes, nChunks int64,
	nonfill cu.DevicePtr) error {
	if !lit.opt.Checksum {
		return nil
	}
	h := lit.hasher
	if err := h.forked.Record(s); err != nil {
		return fmt.Errorf("record the zstd checksum's start: %w", err)
	}
	if err := h.stream.Wait(h.forked, 0); err != nil {
		return fmt.Errorf("wait for the zstd checksum's source: %w", err)
	}
	// Four threads a chunk: XXH64's four lanes are independent chains.
	grid := int(min(ceilDiv(4*uint64(nChunks), checksumThreads), 1<<30))
	if err := d.fn.litXXH.Launch(grid, 1, 1, checksumThreads, 1, 1, 0, h.stream,
		args(src, cu.DevicePtr(chunkBytes), cu.DevicePtr(nChunks), nonfill, lit.hash)); err != nil {
		return fmt.Errorf("launch zstd checksum hash: %w", err)
	}
	if err := h.done.Record(h.stream); err != nil {
		return fmt.Errorf("record the zstd checksum's end: %w", err)
	}
	return nil
}
