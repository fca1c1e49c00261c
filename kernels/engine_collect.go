//go:build cuda

package kernels

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/zspool/zspool/pipeline"
)

// Collection: the sizes and bytes copied back, and the chunk rows handed
// out of them.

// fetch waits for batch m's sizes and queues the copy back of exactly the
// bytes they add up to, level 0's and each pyramid group's. On the device
// goroutine.
func (e *Engine) fetch(m int64) error {
	b, ev, bt := m&1, &e.ev[m&3], &e.inflight[m&3]
	if err := ev.metaEnd.Synchronize(); err != nil {
		return fmt.Errorf("copy sizes back: %w", err)
	}
	if bt.level0 {
		copy(bt.offsets, unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(e.hOffsets[b]))), len(bt.offsets)))
		bt.total = bt.offsets[len(bt.offsets)-1]
		if bt.total > uint64(len(e.hOut[b])) || (!e.gpuZstd && bt.total%uint64(e.chunk) != 0) {
			return fmt.Errorf("the GPU counted %d bytes of chunks of %d bytes, at most %d fit", bt.total, e.chunk, len(e.hOut[b]))
		}
	}
	for i := range bt.groups {
		gr := &bt.groups[i]
		lv := gr.level
		keys := int(gr.bk.p.Keys + 1)
		gr.offsets = append(gr.offsets[:0], unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(lv.hOffsets[b]))), keys)...)
		gr.total = gr.offsets[keys-1]
		if gr.total > uint64(len(lv.hOut[b])) || (!e.gpuZstd && gr.total%uint64(lv.chunk) != 0) {
			return fmt.Errorf("level %d: the GPU counted %d bytes of chunks of %d bytes, at most %d fit", lv.index, gr.total, lv.chunk, len(lv.hOut[b]))
		}
	}
	if err := ev.bytesStart.Record(e.d2h); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if bt.level0 && bt.total > 0 {
		if err := cu.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(e.hOut[b])), e.dOut[b], int64(bt.total), e.d2h); err != nil {
			return fmt.Errorf("copy chunks back: %w", err)
		}
	}
	for _, gr := range bt.groups {
		if gr.total > 0 {
			if err := cu.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(gr.level.hOut[b])), gr.level.dOut[b], int64(gr.total), e.d2h); err != nil {
				return fmt.Errorf("level %d: copy chunks back: %w", gr.level.index, err)
			}
		}
	}
	if err := ev.bytesEnd.Record(e.d2h); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// collect waits for batch m's bytes, books its stage times and appends
// its chunk rows to outs: level 0's, then each level's.
func (e *Engine) collect(ctx context.Context, m int64, outs []pipeline.LevelOutput) ([]pipeline.LevelOutput, error) {
	b, ev, bt := m&1, &e.ev[m&3], &e.inflight[m&3]
	var ms [stages]float64
	err := e.dev.do(func() error {
		var err error
		ms, err = e.stageTimes(ev, bt)
		return err
	})
	what := fmt.Sprintf("epoch %d", bt.index)
	if !bt.level0 {
		what = "end of data"
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	bytes := e.stageBytes(b, bt)
	e.mu.Lock()
	for i := range stages {
		if bytes[i] > 0 || ms[i] > 0 {
			e.meters[i].Add(bytes[i], time.Duration(ms[i]*float64(time.Millisecond)))
		}
	}
	e.mu.Unlock()
	if bt.level0 {
		rows, err := e.rows(ctx, 0, e.ll, e.chunk, e.comp, e.zero, bt.index, 1, bt.offsets, e.hOut[b][:bt.total], bt.raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		outs = append(outs, rows...)
	}
	for _, gr := range bt.groups {
		lv := gr.level
		rows, err := e.rows(ctx, lv.index, lv.ll, lv.chunk, lv.comp, lv.zero, gr.row, gr.rows, gr.offsets, lv.hOut[b][:gr.total], gr.frames*lv.frameBytes)
		if err != nil {
			return nil, fmt.Errorf("%s: level %d: %w", what, lv.index, err)
		}
		outs = append(outs, rows...)
	}
	return outs, nil
}

// stageTimes waits for a batch's bytes to be back and reads each stage's
// milliseconds off its events (bt says which stages it ran). On the
// device goroutine.
func (e *Engine) stageTimes(ev *events, bt *batch) ([stages]float64, error) {
	var ms [stages]float64
	if err := ev.bytesEnd.Synchronize(); err != nil {
		return ms, fmt.Errorf("copy chunks back: %w", err)
	}
	pairs := [stages][2]*cu.Event{
		stageDownsample: {&ev.aggEnd, &ev.reduceEnd},
		stageLevels:     {&ev.reduceEnd, &ev.levelsEnd},
		stageD2H:        {&ev.metaStart, &ev.metaEnd},
	}
	if bt.level0 {
		pairs[stageH2D] = [2]*cu.Event{&ev.h2dStart, &ev.h2dEnd}
		pairs[stageScatter] = [2]*cu.Event{&ev.scatterStart, &ev.scatterEnd}
		pairs[stageAggregate] = [2]*cu.Event{&ev.scatterEnd, &ev.aggEnd}
		if e.gpuZstd {
			// Keys, then the encoder (whose scan and write stand in
			// for the aggregate's): compress is from compStart on.
			pairs[stageAggregate] = [2]*cu.Event{&ev.scatterEnd, &ev.compStart}
			pairs[stageCompress] = [2]*cu.Event{&ev.compStart, &ev.aggEnd}
		}
	}
	for i, p := range pairs {
		if p[0] == nil {
			continue
		}
		t, err := p[0].Elapsed(*p[1])
		if err != nil {
			return ms, fmt.Errorf("stage timing: %w", err)
		}
		ms[i] = t
	}
	t, err := ev.bytesStart.Elapsed(ev.bytesEnd)
	ms[stageD2H] += t
	if err == nil && e.lit != nil {
		err = e.lit.check()
	}
	return ms, err
}

// stageBytes is what each stage of batch bt (in buffers b) moved: the
// raw bytes in, what the chunks and the pyramid's levels came to, and
// what came back with their offsets.
func (e *Engine) stageBytes(b int64, bt *batch) [stages]int64 {
	var back int64
	if bt.level0 {
		back = int64(bt.total) + int64(len(e.hOffsets[b]))
	}
	for _, gr := range bt.groups {
		back += int64(gr.total) + 8*int64(len(gr.offsets))
	}
	var bytes [stages]int64
	bytes[stageH2D], bytes[stageScatter], bytes[stageAggregate] = bt.raw, bt.raw, int64(bt.total)
	if e.gpuZstd && bt.level0 {
		bytes[stageCompress] = bt.raw
	}
	bytes[stageDownsample], bytes[stageLevels], bytes[stageD2H] = bt.reduced, bt.leveled, back
	return bytes
}

// rows builds chunk rows first…first+n−1 of a level from one batch's
// shard-ordered bytes (keys: inner shard, row within the batch, slot):
// views into pinned memory for codec none, the compressor's output for
// zstd (each row but the last copied out before the next is compressed).
func (e *Engine) rows(ctx context.Context, l int, ll *pipeline.RowLayout, chunk int64, comp *pipeline.Compressor, zero []byte,
	first, n int64, offs []uint64, buf []byte, raw int64) ([]pipeline.LevelOutput, error) {
	key := func(i int, j int64) uint64 {
		return uint64((ll.ShardOf[i]*n+j)*ll.InnerSize + ll.InnerSlot[i])
	}
	bound := uint64(LitFrameBound(chunk, e.litOpt))
	if want := uint64(int64(len(ll.ByShard))*n*ll.InnerSize) + 1; uint64(len(offs)) != want {
		return nil, fmt.Errorf("%d sizes from the GPU, want %d", len(offs), want)
	}
	for j := range n {
		for i := range ll.Coords {
			k := key(i, j)
			s := offs[k+1] - offs[k]
			if e.gpuZstd && s > bound {
				return nil, fmt.Errorf("row %d: the GPU sized chunk %d's frame at %d bytes, more than its bound %d",
					first+j, i, s, bound)
			}
			if !e.gpuZstd && s != 0 && s != uint64(chunk) {
				return nil, fmt.Errorf("row %d: the GPU sized chunk %d at %d bytes, not %d or 0", first+j, i, s, chunk)
			}
		}
	}
	out := make([]pipeline.LevelOutput, 0, n)
	for j := range n {
		view := func(i int) []byte {
			k := key(i, j)
			lo, hi := offs[k], offs[k+1]
			if lo == hi {
				return nil
			}
			return buf[lo:hi:hi]
		}
		if comp == nil {
			out = append(out, ll.Group(l, first+j, view))
			continue
		}
		err := comp.Run(ctx, len(ll.Coords), raw/n, func(i int, _ []byte) []byte {
			if v := view(i); v != nil {
				return v
			}
			return zero
		})
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", first+j, err)
		}
		row := ll.Group(l, first+j, comp.Stored)
		if j < n-1 {
			row = detach(row)
		}
		out = append(out, row)
	}
	return out, nil
}

// detach copies a chunk row's bytes into memory of its own.
func detach(out pipeline.LevelOutput) pipeline.LevelOutput {
	var n int
	for _, s := range out.Shards {
		for _, c := range s.Chunks {
			n += len(c.Data)
		}
	}
	buf := make([]byte, 0, n)
	for _, s := range out.Shards {
		for j, c := range s.Chunks {
			if c.Data != nil {
				at := len(buf)
				buf = append(buf, c.Data...)
				s.Chunks[j].Data = buf[at:len(buf):len(buf)]
			}
		}
	}
	return out
}

func detachAll(outs []pipeline.LevelOutput) {
	for i := range outs {
		outs[i] = detach(outs[i])
	}
}
