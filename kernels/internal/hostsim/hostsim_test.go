//go:build hostsim

package hostsim

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zspool/zspool/kernels/internal/layout"
	"github.com/zspool/zspool/kernels/internal/reference"
)

func TestFieldOffsetsMatchTheGoEncoding(t *testing.T) {
	dGrid, gatherVec := Offsets()
	// d_grid is the last array of 8 Div32 (8 bytes each); gather_vec is
	// followed by d_row, d_rpc and the two Div32 arrays.
	if want := uintptr(layout.EncodedSize - 8*layout.MaxRank); dGrid != want {
		t.Errorf("offsetof(d_grid) = %d, Go encodes it at %d", dGrid, want)
	}
	if want := uintptr(layout.EncodedSize - 16 - 16*layout.MaxRank - 8); gatherVec != want {
		t.Errorf("offsetof(gather_vec) = %d, Go encodes it at %d", gatherVec, want)
	}
}

func check(t *testing.T, sh reference.Shape, rng *rand.Rand) {
	t.Helper()
	raw := reference.Raw(rng, sh.Frames*sh.FrameBytes())
	want := reference.Scatter(sh.Grid, sh.Frames, sh.Elem, raw)
	p, err := layout.New(sh.Grid, sh.Frames, sh.Elem)
	if err != nil {
		t.Fatal(err)
	}
	for _, wide := range []bool{false, true} {
		got, err := Run(p, wide, raw)
		if err != nil {
			t.Fatal(err)
		}
		where := fmt.Sprintf("%s grid %+v elem %d frames %d vec %d wide %v", sh.Name, sh.Grid, sh.Elem, sh.Frames, p.Vec, wide)
		if !bytes.Equal(got.Layout, want.Layout) {
			i := 0
			for i < len(want.Layout) && got.Layout[i] == want.Layout[i] {
				i++
			}
			t.Fatalf("%s: chunk layout differs first at byte %d of %d (chunk %d)", where, i, len(want.Layout), int64(i)/int64(p.ChunkBytes))
		}
		if !slices.Equal(got.NonFill, want.NonFill) {
			t.Fatalf("%s: all-fill flags %v, want %v", where, got.NonFill, want.NonFill)
		}
		if !slices.Equal(got.Keys, want.Keys) {
			t.Fatalf("%s: keys %v, want %v", where, got.Keys, want.Keys)
		}
		if p.Keys != want.NKeys {
			t.Fatalf("%s: %d keys, want %d", where, p.Keys, want.NKeys)
		}
	}
}

func TestIssueShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sh := range reference.IssueShapes() {
		t.Run(sh.Name, func(t *testing.T) {
			check(t, sh, rng)
			// A short last epoch and a batch of several epochs.
			short := sh
			short.Frames = max(1, sh.Frames-1)
			check(t, short, rng)
			multi := sh
			multi.Frames = 2*sh.Grid.Chunk[0] + 1
			check(t, multi, rng)
		})
	}
}

func TestRandomShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		check(t, reference.RandomShape(rng), rng)
	}
}
