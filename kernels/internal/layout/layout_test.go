package layout

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/zspool/zspool/zarr"
)

func TestDiv32IsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	divisors := []uint32{1, 2, 3, 5, 7, 255, 256, 257, 4095, 1 << 16, 1<<31 - 1, 1 << 31, 1<<31 + 1, math.MaxUint32}
	for range 2000 {
		divisors = append(divisors, 1+rng.Uint32N(1<<uint(1+rng.IntN(31))))
	}
	for _, d := range divisors {
		dv := NewDiv32(d)
		ns := []uint32{0, 1, d - 1, d, d + 1, math.MaxUint32, math.MaxUint32 - 1, math.MaxUint32 / d * d, math.MaxUint32/d*d - 1}
		for range 200 {
			ns = append(ns, rng.Uint32())
		}
		for _, n := range ns {
			if got := dv.Div(n); got != n/d {
				t.Fatalf("%d / %d = %d by multiply-shift (mul %d shift %d), want %d", n, d, got, dv.Mul, dv.Shift, n/d)
			}
		}
	}
}

func TestParams(t *testing.T) {
	// 2048×2048 uint16 frames, 256×256 chunks, 16 frames an epoch.
	g := zarr.Grid{Shape: []int64{100, 2048, 2048}, Chunk: []int64{16, 256, 256}, Shard: []int64{1, 4, 4}}
	p, err := New(g, 16, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Encode()) != EncodedSize {
		t.Fatalf("encoded %d bytes, want %d", len(p.Encode()), EncodedSize)
	}
	if p.Vec != 16 || p.GatherVec != 16 || p.Wide || p.NChunks != 64 || p.ChunkBytes != 16*256*256*2 ||
		p.InBytes != 16*2048*2048*2 || p.Epochs != 1 || p.InnerSlots != 16 || p.Keys != 64 || p.Stride[1] != 4096 {
		t.Fatalf("unexpected params %+v", p)
	}
	// A last epoch of 3 frames pads to the same layout.
	if q, _ := New(g, 3, 2); q.OutBytes() != p.OutBytes() || q.InBytes != 3*2048*2048*2 {
		t.Fatalf("short epoch: out %d in %d", q.OutBytes(), q.InBytes)
	}
	// Odd widths narrow the access.
	if q, _ := New(zarr.Grid{Shape: []int64{4, 9, 7}, Chunk: []int64{1, 3, 4}, Shard: []int64{1, 1, 1}}, 1, 2); q.Vec != 2 {
		t.Fatalf("7-wide uint16 rows: access %d bytes, want 2", q.Vec)
	}
	if _, err := New(zarr.Grid{Shape: make([]int64, 9), Chunk: make([]int64, 9), Shard: make([]int64, 9)}, 1, 1); err == nil {
		t.Fatal("9 dims accepted")
	}
	// 4 GiB of epoch needs the 64-bit kernels.
	if q, _ := New(zarr.Grid{Shape: []int64{64, 1 << 16, 1 << 16}, Chunk: []int64{1, 1024, 1024}, Shard: []int64{1, 1, 1}}, 1, 1); !q.Wide {
		t.Fatal("a 4 GiB frame stayed on the 32-bit kernels")
	}
}

func TestNewReduce(t *testing.T) {
	// A 4-D level: channels kept, y and x halved, uint16 big endian.
	r, err := NewReduce([]int64{3, 37, 33}, []int64{3, 19, 17}, []bool{false, true, true}, 2, KindU16, MethodMin, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Encode()) != ReduceEncodedSize {
		t.Fatalf("encoded %d bytes, want %d", len(r.Encode()), ReduceEncodedSize)
	}
	if r.Rank != 3 || r.Swap != 1 || r.Halved != 2 || r.Narrow != 1 || r.OutElems != 3*19*17 || r.InFrame != 2*3*37*33 || r.OutFrame != 2*3*19*17 {
		t.Fatalf("params %+v", r)
	}
	// Halved strides run from the fastest dim: x (2 bytes), then y.
	if r.HStride[0] != 2 || r.HStride[1] != 2*33 || r.InStride[0] != 2*37*33 {
		t.Fatalf("strides %v, halved strides %v", r.InStride, r.HStride)
	}
	if _, err := NewReduce([]int64{5}, []int64{2}, []bool{true}, 1, KindU8, MethodMean, false); err == nil {
		t.Fatal("5 halved into 2: no error")
	}
	if _, err := Kind("complex64"); err == nil {
		t.Fatal("Kind(complex64): no error")
	}
	for m, name := range []string{"mean", "min", "max", "decimate"} {
		if got, err := Method(name); err != nil || got != m {
			t.Fatalf("Method(%q) = %d, %v", name, got, err)
		}
	}
}
