//go:build cuda

package kernels

import (
	"errors"
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// MeasureCopies times reps copies of a staging buffer to the GPU, of an
// output buffer back, and of both at once, on the engine's own streams and
// pinned buffers: the ceiling the engine's copies work under. Call it with
// no epoch in flight (before the first Encode or after Flush).
func (e *Engine) MeasureCopies(reps int) (CopyRates, error) {
	if e.next != 0 {
		return CopyRates{}, errors.New("measure copies: epochs are in flight")
	}
	var r CopyRates
	err := e.dev.do(func() error {
		var evs [3]cu.Event
		for i := range evs {
			var err error
			if evs[i], err = cu.MakeEvent(cu.DefaultEvent); err != nil {
				return fmt.Errorf("create event: %w", err)
			}
			defer cu.DestroyEvent(&evs[i])
		}
		start, endIn, endOut := evs[0], evs[1], evs[2]
		in, out := int64(len(e.staging[0])), int64(len(e.hOut[0]))
		copyIn := func() error {
			for range reps {
				if err := cu.MemcpyHtoDAsync(e.dIn[0], unsafe.Pointer(unsafe.SliceData(e.staging[0])), in, e.h2d); err != nil {
					return fmt.Errorf("copy to GPU: %w", err)
				}
			}
			return endIn.Record(e.h2d)
		}
		copyOut := func() error {
			for range reps {
				if err := cu.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(e.hOut[0])), e.dOut[0], out, e.d2h); err != nil {
					return fmt.Errorf("copy from GPU: %w", err)
				}
			}
			return endOut.Record(e.d2h)
		}
		// elapsed times what queue puts on the streams from a common start.
		elapsed := func(queue func() error, ends ...cu.Event) (float64, error) {
			if err := start.Record(e.h2d); err != nil {
				return 0, err
			}
			if err := e.d2h.Wait(start, 0); err != nil {
				return 0, err
			}
			if err := queue(); err != nil {
				return 0, err
			}
			var longest float64
			for _, end := range ends {
				if err := end.Synchronize(); err != nil {
					return 0, err
				}
				ms, err := start.Elapsed(end)
				if err != nil {
					return 0, err
				}
				longest = max(longest, ms/1e3)
			}
			return longest, nil
		}
		// One untimed round first: the copy engines' first use is slower.
		if _, err := elapsed(func() error { return errors.Join(copyIn(), copyOut()) }, endIn, endOut); err != nil {
			return err
		}
		tIn, err := elapsed(copyIn, endIn)
		if err != nil {
			return err
		}
		tOut, err := elapsed(copyOut, endOut)
		if err != nil {
			return err
		}
		tBoth, err := elapsed(func() error { return errors.Join(copyIn(), copyOut()) }, endIn, endOut)
		if err != nil {
			return err
		}
		n := float64(reps)
		r = CopyRates{H2D: n * float64(in) / tIn, D2H: n * float64(out) / tOut, Both: n * float64(in+out) / tBoth}
		return nil
	})
	return r, err
}
