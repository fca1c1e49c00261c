//go:build cuda

package kernels

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/zspool/zspool/kernels/internal/layout"
	"github.com/zspool/zspool/kernels/internal/reference"
	"github.com/zspool/zspool/zarr"
)

// openDevice opens GPU 0 for a test, or skips it where there is none.
func openDevice(t *testing.T) *Device {
	t.Helper()
	if _, err := Probe(); err != nil {
		t.Skipf("no usable GPU: %v", err)
	}
	d, err := Open(0)
	if err != nil {
		t.Fatalf("open GPU 0: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestProbe(t *testing.T) {
	infos, err := Probe()
	if err != nil {
		t.Skipf("no usable GPU: %v", err)
	}
	for _, i := range infos {
		t.Logf("GPU: %s", i)
	}
}

// gpuBatch is what the kernels made of one batch.
type gpuBatch struct {
	layout  []byte
	nonfill []uint32
	keys    []uint64
	offsets []uint64
	shard   []byte
}

// runBatch scatters and aggregates one raw batch with the engine's launch
// code, synchronously, on buffers poisoned beforehand so that anything the
// kernels fail to write shows.
func (d *Device) runBatch(p *layout.Params, raw []byte) (*gpuBatch, error) {
	r := &gpuBatch{
		layout: make([]byte, p.OutBytes()), nonfill: make([]uint32, p.NChunks), keys: make([]uint64, p.NChunks),
		offsets: make([]uint64, p.Keys+1),
	}
	shard := make([]byte, p.OutBytes())
	err := d.do(func() error {
		var ptrs [7]cu.DevicePtr
		defer func() {
			for _, ptr := range ptrs {
				if ptr != 0 {
					cu.MemFree(ptr)
				}
			}
		}()
		sizes := []int64{int64(p.InBytes), int64(p.OutBytes()), 4 * int64(p.NChunks), 8 * int64(p.NChunks),
			8 * int64(p.Keys), 8 * int64(p.Keys+1), int64(p.OutBytes())}
		for i, n := range sizes {
			var err error
			if ptrs[i], err = cu.MemAlloc(max(n, 8)); err != nil {
				return err
			}
			if err := cu.MemsetD8(ptrs[i], 0xa5, max(n, 8)); err != nil {
				return err
			}
		}
		in, lay, flags, keyOf, sz, offs, out := ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4], ptrs[5], ptrs[6]
		if len(raw) > 0 {
			if err := cu.MemcpyHtoD(in, unsafe.Pointer(&raw[0]), int64(len(raw))); err != nil {
				return err
			}
		}
		bk, err := d.prepare(p)
		if err != nil {
			return err
		}
		defer cu.MemFree(bk.dParams)
		s, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return err
		}
		defer s.Destroy()
		if err := d.scatter(s, bk, in, lay, flags); err != nil {
			return err
		}
		if err := d.aggregate(s, bk, nil, lay, flags, keyOf, sz, offs, out, cu.Event{}, nil); err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return fmt.Errorf("kernels: %w", err)
		}
		for _, c := range []struct {
			dst unsafe.Pointer
			src cu.DevicePtr
			n   int64
		}{
			{unsafe.Pointer(&r.layout[0]), lay, int64(len(r.layout))},
			{unsafe.Pointer(&r.nonfill[0]), flags, 4 * int64(len(r.nonfill))},
			{unsafe.Pointer(&r.keys[0]), keyOf, 8 * int64(len(r.keys))},
			{unsafe.Pointer(&r.offsets[0]), offs, 8 * int64(len(r.offsets))},
			{unsafe.Pointer(&shard[0]), out, int64(len(shard))},
		} {
			if err := cu.MemcpyDtoH(c.dst, c.src, c.n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.shard = shard[:min(r.offsets[p.Keys], uint64(len(shard)))]
	return r, nil
}

// checkBatch compares the kernels' work on one batch with the CPU
// reference, on the narrow (32-bit) or wide (64-bit) index path.
func checkBatch(t *testing.T, d *Device, sh reference.Shape, wide bool, rng *rand.Rand) {
	t.Helper()
	raw := reference.Raw(rng, sh.Frames*sh.FrameBytes())
	want := reference.Scatter(sh.Grid, sh.Frames, sh.Elem, raw)
	p, err := layout.New(sh.Grid, sh.Frames, sh.Elem)
	if err != nil {
		t.Fatal(err)
	}
	p.Wide = p.Wide || wide
	got, err := d.runBatch(p, raw)
	if err != nil {
		t.Fatalf("%s: %v", sh.Name, err)
	}
	where := fmt.Sprintf("%s: grid %v/%v/%v elem %d frames %d (access %d, gather %d, wide %v)",
		sh.Name, sh.Grid.Shape, sh.Grid.Chunk, sh.Grid.Shard, sh.Elem, sh.Frames, p.Vec, p.GatherVec, p.Wide)
	if !bytes.Equal(got.layout, want.Layout) {
		i := 0
		for got.layout[i] == want.Layout[i] {
			i++
		}
		t.Fatalf("%s: scatter: chunk layout differs first at byte %d of %d (chunk %d): got %#x, want %#x",
			where, i, len(want.Layout), uint64(i)/p.ChunkBytes, got.layout[i], want.Layout[i])
	}
	for k, f := range got.nonfill {
		if (f != 0) != want.NonFill[k] || f > 1 {
			t.Fatalf("%s: scatter: chunk %d all-fill flag %d, want non-fill %v", where, k, f, want.NonFill[k])
		}
	}
	if !slices.Equal(got.keys, want.Keys) {
		t.Fatalf("%s: aggregate: shard-order keys %v, want %v", where, got.keys, want.Keys)
	}
	if !slices.Equal(got.offsets, want.Offsets) {
		t.Fatalf("%s: aggregate: offsets %v, want %v", where, got.offsets, want.Offsets)
	}
	if !bytes.Equal(got.shard, want.Shard) {
		t.Fatalf("%s: aggregate: the shard-ordered bytes differ (%d bytes, want %d)", where, len(got.shard), len(want.Shard))
	}
}

// TestScatterAndAggregateIssueShapes runs every shape of the CPU-pipeline
// issue at every element size: a full epoch, a short one, and a batch of
// two epochs and a frame.
func TestScatterAndAggregateIssueShapes(t *testing.T) {
	d := openDevice(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sh := range reference.IssueShapes() {
		for _, elem := range []int{1, 2, 4, 8} {
			sh.Elem = elem
			t.Run(fmt.Sprintf("%s/elem%d", sh.Name, elem), func(t *testing.T) {
				n0 := sh.Grid.Chunk[0]
				for _, frames := range []int64{sh.Frames, max(1, n0-1), 2*n0 + 1} {
					s := sh
					s.Frames = frames
					checkBatch(t, d, s, false, rng)
				}
			})
		}
	}
}

// TestScatterAndAggregateRaggedShardGrids has shard grids cut short by the
// array in every inner dim, so slot keys leave holes.
func TestScatterAndAggregateRaggedShardGrids(t *testing.T) {
	d := openDevice(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, sh := range []reference.Shape{
		{Name: "ragged_2d", Grid: zarrGrid([]int64{3, 10, 7}, []int64{1, 3, 2}, []int64{1, 3, 3}), Elem: 2, Frames: 1},
		{Name: "ragged_3d", Grid: zarrGrid([]int64{4, 11, 5, 9}, []int64{2, 2, 2, 2}, []int64{2, 4, 2, 3}), Elem: 4, Frames: 3},
		{Name: "ragged_6d", Grid: zarrGrid([]int64{2, 5, 4, 3, 7, 6}, []int64{1, 2, 3, 2, 3, 4}, []int64{1, 2, 2, 2, 2, 1}), Elem: 1, Frames: 2},
	} {
		t.Run(sh.Name, func(t *testing.T) {
			checkBatch(t, d, sh, false, rng)
			checkBatch(t, d, sh, true, rng)
		})
	}
}

// TestScatterAndAggregateRandomShapes draws 1- to 5-dim shapes, mostly
// ragged, at every element size, on both index paths.
func TestScatterAndAggregateRandomShapes(t *testing.T) {
	d := openDevice(t)
	rng := rand.New(rand.NewPCG(9, 10))
	for i := range 400 {
		checkBatch(t, d, reference.RandomShape(rng), i%4 == 3, rng)
	}
}

func zarrGrid(shape, chunk, shard []int64) zarr.Grid {
	return zarr.Grid{Shape: shape, Chunk: chunk, Shard: shard}
}
