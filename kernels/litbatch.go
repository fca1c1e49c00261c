//go:build cuda

package kernels

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/zspool/zspool/zstdlit"
)

// LitBatch runs the GPU zstd encoder on its own, outside an engine: a
// batch of equally sized chunks in device memory, encoded into one frame
// each. The kernels' tests compare its frames with package zstdlit, and
// the kernel-only benchmark times Run.
type LitBatch struct {
	dev                          *Device
	chunk, n                     int64
	dSrc, dSizes, dOffsets, dOut cu.DevicePtr
	lit                          *litScratch
	opt                          zstdlit.Options
	stream                       cu.Stream
	start, end                   cu.Event
	marks                        [4]cu.Event
	stages                       [5]time.Duration
}

// NewLitBatch takes device memory for n chunks of chunkBytes, to be
// written as frames with opt.
func NewLitBatch(dev *Device, chunkBytes int64, n int, opt zstdlit.Options) (*LitBatch, error) {
	if chunkBytes < 0 || n < 1 {
		return nil, fmt.Errorf("lit batch: %d chunks of %d bytes", n, chunkBytes)
	}
	b := &LitBatch{dev: dev, chunk: chunkBytes, n: int64(n), opt: opt}
	err := dev.do(func() error {
		for _, a := range []struct {
			dst *cu.DevicePtr
			n   int64
		}{
			{&b.dSrc, chunkBytes * b.n}, {&b.dSizes, 8 * b.n}, {&b.dOffsets, 8 * (b.n + 1)},
			{&b.dOut, LitFrameBound(chunkBytes, opt) * b.n},
		} {
			var err error
			if *a.dst, err = cu.MemAlloc(max(a.n, 8)); err != nil {
				return fmt.Errorf("allocate %d bytes of GPU memory: %w", a.n, err)
			}
		}
		var err error
		if b.lit, err = allocLit(chunkBytes, b.n, opt); err != nil {
			return err
		}
		if b.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
			return fmt.Errorf("create stream: %w", err)
		}
		for _, ev := range []*cu.Event{&b.start, &b.end, &b.marks[0], &b.marks[1], &b.marks[2], &b.marks[3]} {
			if *ev, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
				return fmt.Errorf("create event: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Stages is the last Run's time in the match seeds, the match parse, the
// sequences, the packing of literals, and the rest (plan, frame layout,
// scan, encode).
func (b *LitBatch) Stages() [5]time.Duration { return b.stages }

// Load copies the batch's chunks (n × chunkBytes bytes) to the GPU.
func (b *LitBatch) Load(src []byte) error {
	if int64(len(src)) != b.chunk*b.n {
		return fmt.Errorf("lit batch: %d bytes for %d chunks of %d", len(src), b.n, b.chunk)
	}
	if len(src) == 0 {
		return nil
	}
	return b.dev.do(func() error {
		if err := cu.MemcpyHtoD(b.dSrc, unsafe.Pointer(unsafe.SliceData(src)), int64(len(src))); err != nil {
			return fmt.Errorf("copy to GPU: %w", err)
		}
		return nil
	})
}

// Run encodes the loaded chunks and returns the kernels' time: plan,
// frame layout, scan of the sizes, encode.
func (b *LitBatch) Run() (time.Duration, error) {
	var ms float64
	err := b.dev.do(func() error {
		d, s := b.dev, b.stream
		// Poison the output, untimed: a byte the kernels fail to write
		// then shows in the tests instead of reading as a lucky zero.
		if err := cu.MemsetD8Async(b.dOut, 0xa5, LitFrameBound(b.chunk, b.opt)*b.n, s); err != nil {
			return fmt.Errorf("poison the output: %w", err)
		}
		if err := b.start.Record(s); err != nil {
			return err
		}
		b.lit.marks = b.marks[:]
		if err := d.litSizes(s, b.lit, b.dSrc, b.chunk, b.n, 0, 0, b.dSizes); err != nil {
			return err
		}
		if err := d.fn.scan.Launch(1, 1, 1, scanThreads, 1, 1, 0, s, args(b.dSizes, cu.DevicePtr(b.n), b.dOffsets)); err != nil {
			return fmt.Errorf("launch scan: %w", err)
		}
		if err := d.litWrite(s, b.lit, b.dSrc, b.chunk, b.n, 0, b.dOffsets, b.dOut); err != nil {
			return err
		}
		if err := b.end.Record(s); err != nil {
			return err
		}
		if err := b.end.Synchronize(); err != nil {
			return fmt.Errorf("zstd kernels: %w", err)
		}
		var err error
		if ms, err = b.start.Elapsed(b.end); err != nil {
			return err
		}
		evs := []cu.Event{b.start, b.marks[0], b.marks[1], b.marks[2], b.marks[3], b.end}
		for i := range b.stages {
			st, err := evs[i].Elapsed(evs[i+1])
			if err != nil {
				return err
			}
			b.stages[i] = time.Duration(st * float64(time.Millisecond))
		}
		return b.lit.check()
	})
	return time.Duration(ms * float64(time.Millisecond)), err
}

// Frames copies the last Run's frames back, one per chunk.
func (b *LitBatch) Frames() ([][]byte, error) {
	offs := make([]uint64, b.n+1)
	var out []byte
	err := b.dev.do(func() error {
		if err := cu.MemcpyDtoH(unsafe.Pointer(&offs[0]), b.dOffsets, 8*(b.n+1)); err != nil {
			return fmt.Errorf("copy offsets back: %w", err)
		}
		total := offs[b.n]
		if int64(total) > LitFrameBound(b.chunk, b.opt)*b.n {
			return fmt.Errorf("the GPU sized the frames at %d bytes, more than their bound", total)
		}
		out = make([]byte, total)
		if total == 0 {
			return nil
		}
		if err := cu.MemcpyDtoH(unsafe.Pointer(&out[0]), b.dOut, int64(total)); err != nil {
			return fmt.Errorf("copy frames back: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	frames := make([][]byte, b.n)
	for i := range frames {
		if offs[i] > offs[i+1] {
			return nil, fmt.Errorf("frame %d: offsets %d > %d", i, offs[i], offs[i+1])
		}
		frames[i] = out[offs[i]:offs[i+1]:offs[i+1]]
	}
	return frames, nil
}

// Encode is Load, Run and Frames.
func (b *LitBatch) Encode(src []byte) ([][]byte, error) {
	if err := b.Load(src); err != nil {
		return nil, err
	}
	if _, err := b.Run(); err != nil {
		return nil, err
	}
	return b.Frames()
}

// Close releases the batch's device memory.
func (b *LitBatch) Close() error {
	return b.dev.do(func() error {
		var errs []error
		if b.stream != (cu.Stream{}) {
			errs = append(errs, b.stream.Synchronize())
		}
		for _, p := range []*cu.DevicePtr{&b.dSrc, &b.dSizes, &b.dOffsets, &b.dOut} {
			if *p != 0 {
				errs = append(errs, cu.MemFree(*p))
				*p = 0
			}
		}
		if b.lit != nil {
			b.lit.free()
		}
		for _, ev := range []*cu.Event{&b.start, &b.end, &b.marks[0], &b.marks[1], &b.marks[2], &b.marks[3]} {
			if *ev != (cu.Event{}) {
				errs = append(errs, cu.DestroyEvent(ev))
			}
		}
		if b.stream != (cu.Stream{}) {
			errs = append(errs, b.stream.Destroy())
		}
		return errors.Join(errs...)
	})
}

// table reads back block i's code table from the last Run: code | length<<16
// per symbol (meaningful for Compressed blocks).
func (b *LitBatch) table(i int) ([256]uint32, error) {
	var t [256]uint32
	err := b.dev.do(func() error {
		if int64(i) >= b.lit.capBlocks {
			return fmt.Errorf("block %d of %d", i, b.lit.capBlocks)
		}
		return cu.MemcpyDtoH(unsafe.Pointer(&t[0]), b.lit.tables+cu.DevicePtr(i*litTableBytes), litTableBytes)
	})
	return t, err
}
