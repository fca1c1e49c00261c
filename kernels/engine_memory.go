//go:build cuda

package kernels

import (
	"errors"
	"fmt"

	"gorgonia.org/cu"

	"github.com/zspool/zspool/kernels/internal/layout"
	"github.com/zspool/zspool/pipeline"
)

// The engine's memory: the per-level plan, and the device and pinned
// buffers it allocates once and frees at Close.

// planLevels lays out every pyramid level's reduction and buffers.
func (e *Engine) planLevels() error {
	p := e.plan
	m := p.Manifest
	e.levels = make([]*level, len(p.Levels))
	if len(p.Levels) < 2 {
		return nil
	}
	kind, err := layout.Kind(m.DType)
	if err != nil {
		return fmt.Errorf("%v: %w", err, ErrUnsupported)
	}
	method := ""
	if m.Multiscale != nil {
		method = m.Multiscale.Method
	}
	meth, err := layout.Method(method)
	if err != nil {
		return fmt.Errorf("%v: %w", err, ErrUnsupported)
	}
	for l := 1; l < len(p.Levels); l++ {
		g := p.Levels[l].Grid
		half := make([]bool, g.Rank()-1)
		for d := range half {
			half[d] = m.Dimensions[d+1].Downsampled()
		}
		red, err := layout.NewReduce(p.Levels[l-1].Grid.Shape[1:], g.Shape[1:], half, p.Elem, kind, meth, m.ByteOrder == "big")
		if err != nil {
			return err
		}
		lv := &level{index: l, ll: pipeline.NewRowLayout(g), frameBytes: p.Levels[l].FrameBytes(p.Elem), inFrame: p.Levels[l-1].FrameBytes(p.Elem),
			chunk: p.ChunkBytes(p.Levels[l]), maxFrames: e.pyr.MaxRows(l) * e.pyr.RowCap(l), red: red,
			shapes: make(map[int64]*batchKernels)}
		if int64(red.OutFrame) != lv.frameBytes || int64(red.InFrame) != lv.inFrame {
			return fmt.Errorf("level %d: reduce of %d-byte frames into %d disagrees with the plan's %d into %d",
				l, red.InFrame, red.OutFrame, lv.inFrame, lv.frameBytes)
		}
		e.levels[l] = lv
	}
	return nil
}

// memoryPlan is what allocate takes, worked out before any of it is: the
// buffers that serve every level (sized by the largest level's needs),
// each level's layout, and the device memory all of it needs.
type memoryPlan struct {
	layoutBytes, flagChunks, sizeKeys int64
	levelOut                          []*layout.Params // by level index; nil at level 0
	need                              int64
}

// planMemory sizes the engine's buffers: level 0's input, output and
// offsets twice (the batches alternate), each level's rows, pending
// frame, outputs and offsets, the layout, flags, keys and sizes shared by
// every level's emissions, and the GPU encoder's scratch.
func (e *Engine) planMemory() (memoryPlan, error) {
	in, out, keys := int64(e.full.InBytes), e.outBytes(e.full, e.chunk), int64(e.full.Keys)
	m := memoryPlan{layoutBytes: int64(e.full.OutBytes()), flagChunks: int64(e.full.NChunks), sizeKeys: keys,
		levelOut: make([]*layout.Params, len(e.levels))}
	m.need = 2*in + 2*out + 2*8*(keys+1)
	for _, lv := range e.levels[1:] {
		lp, err := layout.New(e.plan.Levels[lv.index].Grid, lv.maxFrames, e.plan.Elem)
		if err != nil {
			return m, fmt.Errorf("level %d: %w", lv.index, err)
		}
		m.levelOut[lv.index] = lp
		m.layoutBytes = max(m.layoutBytes, int64(lp.OutBytes()))
		m.flagChunks = max(m.flagChunks, int64(lp.NChunks))
		m.sizeKeys = max(m.sizeKeys, int64(lp.Keys))
		m.need += e.pyr.Capacity(lv.index)*lv.frameBytes + lv.inFrame + 2*e.outBytes(lp, lv.chunk) + 2*8*int64(lp.Keys+1)
	}
	m.need += m.layoutBytes + 4*m.flagChunks + 8*m.flagChunks + 8*m.sizeKeys
	// Level chunks are never larger than level 0's (same shape, clamped).
	if e.gpuZstd {
		m.need += litScratchBytes(e.chunk, m.flagChunks, e.litOpt)
	}
	return m, nil
}

// devAlloc allocates n bytes of device memory (at least 8) into dst.
func devAlloc(dst *cu.DevicePtr, n int64) error {
	var err error
	if *dst, err = cu.MemAlloc(max(n, 8)); err != nil {
		return fmt.Errorf("allocate %s of GPU memory: %w", pipeline.FormatBytes(n), err)
	}
	return nil
}

// pinnedAlloc allocates n bytes of pinned host memory into dst.
func pinnedAlloc(dst *[]byte, n int64) error {
	var err error
	*dst, err = hostAlloc(n)
	return err
}

// firstErr is the first of steps that failed, nil if none did. Every
// step has run: what a failed one left allocated, free releases.
func firstErr(steps ...error) error {
	for _, err := range steps {
		if err != nil {
			return err
		}
	}
	return nil
}

// allocate takes the engine's device and pinned memory, streams and
// events. On the device goroutine.
func (e *Engine) allocate() error {
	m, err := e.planMemory()
	if err != nil {
		return err
	}
	if free, _, err := cu.MemInfo(); err == nil && m.need > free {
		return fmt.Errorf("the engine needs %s of GPU memory, %s is free: lower dimensions[0].chunk",
			pipeline.FormatBytes(m.need), pipeline.FormatBytes(free))
	}
	in, out, keys := int64(e.full.InBytes), e.outBytes(e.full, e.chunk), int64(e.full.Keys)
	for b := range 2 {
		if err := firstErr(devAlloc(&e.dIn[b], in), devAlloc(&e.dOut[b], out), devAlloc(&e.dOffsets[b], 8*(keys+1)),
			pinnedAlloc(&e.staging[b], in), pinnedAlloc(&e.hOut[b], out), pinnedAlloc(&e.hOffsets[b], 8*(keys+1))); err != nil {
			return err
		}
	}
	if err := firstErr(devAlloc(&e.dLayout, m.layoutBytes), devAlloc(&e.dFlags, 4*m.flagChunks),
		devAlloc(&e.dKeyOf, 8*m.flagChunks), devAlloc(&e.dSizes, 8*m.sizeKeys)); err != nil {
		return err
	}
	for _, lv := range e.levels[1:] {
		if err := e.allocateLevel(lv, m.levelOut[lv.index]); err != nil {
			return fmt.Errorf("level %d: %w", lv.index, err)
		}
	}
	if e.gpuZstd {
		if e.lit, err = allocLit(e.chunk, m.flagChunks, e.litOpt); err != nil {
			return err
		}
	}
	for _, s := range []*cu.Stream{&e.h2d, &e.compute, &e.d2h} {
		if *s, err = cu.MakeStream(cu.NonBlocking); err != nil {
			return fmt.Errorf("create stream: %w", err)
		}
	}
	for i := range e.ev {
		for _, x := range e.ev[i].all() {
			if *x, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
				return fmt.Errorf("create event: %w", err)
			}
		}
	}
	for i := range e.inflight {
		e.inflight[i].offsets = make([]uint64, keys+1)
	}
	return nil
}

// allocateLevel takes a pyramid level's buffers (its rows, the pending
// frame, and twice its output and offsets, for layout lp) and readies its
// reduction.
func (e *Engine) allocateLevel(lv *level, lp *layout.Params) error {
	lo, lk := e.outBytes(lp, lv.chunk), int64(lp.Keys)
	steps := []error{devAlloc(&lv.dRows, e.pyr.Capacity(lv.index)*lv.frameBytes), devAlloc(&lv.dPending, lv.inFrame)}
	for b := range 2 {
		steps = append(steps, devAlloc(&lv.dOut[b], lo), devAlloc(&lv.dOffsets[b], 8*(lk+1)),
			pinnedAlloc(&lv.hOut[b], lo), pinnedAlloc(&lv.hOffsets[b], 8*(lk+1)))
	}
	if err := firstErr(steps...); err != nil {
		return err
	}
	var err error
	lv.rk, err = e.dev.prepareReduce(lv.red)
	return err
}

// outBytes is the size of an output buffer for a batch of layout lp:
// its chunks, or their largest frames when the GPU encodes.
func (e *Engine) outBytes(lp *layout.Params, chunk int64) int64 {
	if e.gpuZstd {
		return int64(lp.NChunks) * LitFrameBound(chunk, e.litOpt)
	}
	return int64(lp.OutBytes())
}

// free releases what allocate took, once the streams are idle. On the
// device goroutine.
func (e *Engine) free() error {
	var errs []error
	for _, s := range []*cu.Stream{&e.h2d, &e.compute, &e.d2h} {
		if *s != (cu.Stream{}) {
			errs = append(errs, s.Synchronize(), s.Destroy())
		}
	}
	for i := range e.ev {
		for _, x := range e.ev[i].all() {
			if *x != (cu.Event{}) {
				errs = append(errs, cu.DestroyEvent(x))
			}
		}
	}
	ptrs := []*cu.DevicePtr{&e.dLayout, &e.dFlags, &e.dKeyOf, &e.dSizes}
	hosts := []*[]byte{}
	for b := range 2 {
		ptrs = append(ptrs, &e.dIn[b], &e.dOut[b], &e.dOffsets[b])
		hosts = append(hosts, &e.staging[b], &e.hOut[b], &e.hOffsets[b])
	}
	for _, bk := range e.shapes {
		ptrs = append(ptrs, &bk.dParams)
	}
	for _, lv := range e.levels[1:] {
		ptrs = append(ptrs, &lv.dRows, &lv.dPending)
		for b := range 2 {
			ptrs = append(ptrs, &lv.dOut[b], &lv.dOffsets[b])
			hosts = append(hosts, &lv.hOut[b], &lv.hOffsets[b])
		}
		for _, bk := range lv.shapes {
			ptrs = append(ptrs, &bk.dParams)
		}
		if lv.rk != nil {
			ptrs = append(ptrs, &lv.rk.dParams)
		}
	}
	for _, h := range hosts {
		errs = append(errs, hostFree(*h))
		*h = nil
	}
	if e.lit != nil {
		e.lit.free()
		e.lit = nil
	}
	for _, p := range ptrs {
		if *p != 0 {
			errs = append(errs, cu.MemFree(*p))
			*p = 0
		}
	}
	return errors.Join(errs...)
}
