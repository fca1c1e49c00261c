//go:build hostsim

package hostsim

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zspool/zspool/kernels/internal/layout"
	"github.com/zspool/zspool/kernels/internal/pyramid"
	"github.com/zspool/zspool/kernels/internal/reference"
	"github.com/zspool/zspool/pipeline"
	cpuengine "github.com/zspool/zspool/pipeline/cpu"
	"github.com/zspool/zspool/zarr"
)

func TestReduceParamsMatchTheGoEncoding(t *testing.T) {
	dOut, size := ReduceOffsets()
	if size != layout.ReduceEncodedSize {
		t.Errorf("sizeof(zs_reduce_params) = %d, Go encodes %d", size, layout.ReduceEncodedSize)
	}
	if want := uintptr(layout.ReduceEncodedSize - 8*layout.MaxRank); dOut != want {
		t.Errorf("offsetof(d_out) = %d, Go encodes it at %d", dOut, want)
	}
}

// simLevels runs the GPU engine's pyramid on the CPU: the operations of
// package pyramid on dense host buffers, the reductions through
// reduce.cuh's code, the emitted rows cut into chunks by the reference
// scatter (the layout the GPU's scatter kernel is checked against). It
// returns the chunk rows of levels ≥ 1, chunk bytes uncompressed.
func simLevels(p *pipeline.Plan, raw []byte, first int64) ([]pipeline.LevelOutput, error) {
	st := pyramid.New(p)
	m := p.Manifest
	kind, err := layout.Kind(m.DType)
	if err != nil {
		return nil, err
	}
	method := ""
	if m.Multiscale != nil {
		method = m.Multiscale.Method
	}
	meth, err := layout.Method(method)
	if err != nil {
		return nil, err
	}
	L := len(p.Levels)
	frameBytes := make([]int64, L)
	rows := make([][]byte, L)
	pend := make([][]byte, L)
	reds := make([]*layout.Reduce, L)
	lls := make([]*pipeline.RowLayout, L)
	for l, lv := range p.Levels {
		frameBytes[l] = int64(p.Elem)
		for _, s := range lv.Grid.Shape[1:] {
			frameBytes[l] *= s
		}
		lls[l] = pipeline.NewRowLayout(lv.Grid)
		if l == 0 {
			continue
		}
		rows[l] = make([]byte, st.Capacity(l)*frameBytes[l])
		pend[l] = make([]byte, frameBytes[l-1])
		half := make([]bool, lv.Grid.Rank()-1)
		for d := range half {
			half[d] = m.Dimensions[d+1].Downsampled()
		}
		if reds[l], err = layout.NewReduce(p.Levels[l-1].Grid.Shape[1:], lv.Grid.Shape[1:], half, p.Elem, kind, meth, m.ByteOrder == "big"); err != nil {
			return nil, err
		}
	}
	var outs []pipeline.LevelOutput
	var epoch []byte
	source := func(l int, frame int64) []byte {
		if l == 0 {
			return epoch[frame*frameBytes[0]:]
		}
		return rows[l][frame*frameBytes[l]:]
	}
	run := func(ops []pyramid.Op) error {
		for _, op := range ops {
			l := op.Level
			fb := frameBytes[l]
			switch op.Kind {
			case pyramid.Reduce:
				var src []byte
				if op.Frames*op.NZ > 1 || !op.Pending {
					src = source(l-1, op.Src)
				}
				if err := Reduce(reds[l], rows[l][op.Dst*fb:], pend[l], src, op.Pending, op.Frames, op.NZ); err != nil {
					return fmt.Errorf("%v: %w", op, err)
				}
			case pyramid.Hold:
				copy(pend[l], source(l-1, op.Src)[:frameBytes[l-1]])
			case pyramid.Compact:
				copy(rows[l], rows[l][op.Src*fb:(op.Src+op.Frames)*fb])
			case pyramid.Emit:
				g := p.Levels[l].Grid
				b := reference.Scatter(g, op.Frames, p.Elem, rows[l][:op.Frames*fb])
				ll := lls[l]
				inner := len(ll.Coords)
				cb := g.ChunkElems() * int64(p.Elem)
				for j := range op.Rows {
					out := ll.Group(l, op.Row+j, func(i int) []byte {
						k := int(j)*inner + i
						if !b.NonFill[k] {
							return nil
						}
						return slices.Clone(b.Layout[int64(k)*cb : int64(k+1)*cb])
					})
					outs = append(outs, out)
				}
			}
		}
		return nil
	}
	eb := p.EpochBytes()
	for e := int64(0); e*eb < int64(len(raw)); e++ {
		epoch = raw[e*eb : min(int64(len(raw)), (e+1)*eb)]
		if err := run(st.Epoch(first+e, int64(len(epoch))/p.FrameBytes)); err != nil {
			return nil, err
		}
	}
	return outs, run(st.Flush())
}

// cpuLevels is the CPU engine's chunk rows of levels ≥ 1 (codec none).
func cpuLevels(t *testing.T, p *pipeline.Plan, raw []byte, first int64) []pipeline.LevelOutput {
	t.Helper()
	cpu, err := cpuengine.New(p)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	var outs []pipeline.LevelOutput
	// keep takes the pyramid's rows whole and gives every lent row back,
	// level 0's too, which it does not keep: the CPU engine lends its rows
	// where the plan has it (StorePlan.LentRows, with enough cores), and a
	// row never given back held up the engine's next one for good.
	keep := func(os []pipeline.LevelOutput) {
		for _, o := range os {
			if o.Level != 0 {
				outs = append(outs, pipeline.Keep(o))
			} else if o.Lease != nil {
				o.Lease.Release()
			}
		}
	}
	ctx := context.Background()
	eb := p.EpochBytes()
	for e := int64(0); e*eb < int64(len(raw)); e++ {
		data := raw[e*eb : min(int64(len(raw)), (e+1)*eb)]
		o, err := cpu.Encode(ctx, pipeline.Epoch{Index: first + e, Frames: int64(len(data)) / p.FrameBytes, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		keep(o)
	}
	o, err := cpu.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keep(o)
	return outs
}

// sortRows orders rows by level, then row: engines may interleave levels
// differently, but each level's rows come in order.
func sortRows(rows []pipeline.LevelOutput) {
	slices.SortStableFunc(rows, func(a, b pipeline.LevelOutput) int {
		if a.Level != b.Level {
			return a.Level - b.Level
		}
		return int(a.Epoch - b.Epoch)
	})
}

func sameRows(got, want []pipeline.LevelOutput) error {
	sortRows(got)
	sortRows(want)
	if len(got) != len(want) {
		return fmt.Errorf("%d level rows, want %d", len(got), len(want))
	}
	for r := range want {
		g, w := got[r], want[r]
		if g.Level != w.Level || g.Epoch != w.Epoch || len(g.Shards) != len(w.Shards) {
			return fmt.Errorf("row %d: level %d row %d (%d shards), want level %d row %d (%d shards)", r, g.Level, g.Epoch, len(g.Shards), w.Level, w.Epoch, len(w.Shards))
		}
		for s := range w.Shards {
			gs, ws := g.Shards[s], w.Shards[s]
			if gs.Inner != ws.Inner || len(gs.Chunks) != len(ws.Chunks) {
				return fmt.Errorf("level %d row %d shard %d: %d chunks, want %d", w.Level, w.Epoch, s, len(gs.Chunks), len(ws.Chunks))
			}
			for c := range ws.Chunks {
				gc, wc := gs.Chunks[c], ws.Chunks[c]
				if gc.Slot != wc.Slot || (gc.Data == nil) != (wc.Data == nil) || !bytes.Equal(gc.Data, wc.Data) {
					return fmt.Errorf("level %d row %d shard %d chunk %d: slot %d absent %v, want slot %d absent %v (bytes equal %v)",
						w.Level, w.Epoch, s, c, gc.Slot, gc.Data == nil, wc.Slot, wc.Data == nil, bytes.Equal(gc.Data, wc.Data))
				}
			}
		}
	}
	return nil
}

// TestPyramidMatchesCPU runs the GPU engine's pyramid, on the CPU, for
// every method, pyramid shape and dtype in both byte orders, and compares
// every level's chunk rows with the CPU engine's.
func TestPyramidMatchesCPU(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, method := range reference.Methods {
		for _, sh := range append(reference.PyramidShapes(), reference.ResumableZStack()) {
			for _, dt := range reference.DTypes {
				for _, big := range []bool{false, true} {
					name := fmt.Sprintf("%s_%s_%s_big%v", method, sh.Name, dt, big)
					t.Run(name, func(t *testing.T) {
						checkPyramid(t, sh, name, dt, method, big, rng)
					})
				}
			}
		}
	}
}

func checkPyramid(t *testing.T, sh reference.PyramidShape, name string, dt zarr.DType, method string, big bool, rng *rand.Rand) {
	t.Helper()
	p, err := reference.PyramidPlan(sh, name, dt, method, big, "none")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Levels) < 2 {
		t.Fatalf("%d levels, want a pyramid", len(p.Levels))
	}
	raw := reference.PyramidRaw(rng, dt, big, sh.Elems())
	got, err := simLevels(p, raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameRows(got, cpuLevels(t, p, raw, 0)); err != nil {
		t.Fatal(err)
	}
}

// TestPyramidResumedMidStream starts both engines at a later epoch, the
// way a resumed conversion does, so level rows are numbered from the
// first epoch seen.
func TestPyramidResumedMidStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	resumed := 0
	for _, sh := range append(reference.PyramidShapes(), reference.ResumableZStack()) {
		p, err := reference.PyramidPlan(sh, sh.Name, "int16", "mean", false, "none")
		if err != nil {
			t.Fatal(err)
		}
		first, ok := reference.ResumeEpoch(p)
		if !ok {
			continue
		}
		raw := reference.PyramidRaw(rng, "int16", false, sh.Elems())
		tail := raw[first*p.EpochBytes():]
		wantAll := cpuLevels(t, p, tail, first)
		gotAll, err := simLevels(p, tail, first)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameRows(gotAll, wantAll); err != nil {
			t.Fatalf("%s from epoch %d: %v", sh.Name, first, err)
		}
		resumed++
	}
	if resumed < 3 {
		t.Fatalf("only %d shapes have a resume point inside the data", resumed)
	}
	t.Logf("%d shapes resumed mid-stream", resumed)
}
