package pyramid_test

import (
	"fmt"
	"testing"

	"github.com/zspool/zspool/kernels/internal/pyramid"
	"github.com/zspool/zspool/kernels/internal/reference"
	"github.com/zspool/zspool/pipeline"
)

// frameSim follows frames through the operations by identity: each level
// frame is the list of level-0 frame numbers it was reduced from, so the
// test checks what the CPU engine's cascade defines without any values.
type frameSim struct {
	rows    [][][]int64 // per level, the row buffer's frames
	pending [][]int64   // per level, the held frame of the level above
	epoch   [][]int64
}

// TestOperationsFollowTheCascade runs every pyramid shape's epochs, from
// the start and, where the shape has a resume point inside the data, from
// that point, and checks every emitted row: the rows of each level are
// numbered consecutively from the first epoch's row, cover the level's
// shape exactly, and each frame of level l holds the level-0 frames
// 2^l·k … 2^l·(k+1)−1 (clipped to the data) for a z-stack, or frame k
// alone otherwise. A shape whose first resume point lies past its data
// has nothing to resume from, so it gets no resume case (rather than a
// skipped one); the resumable z-stack keeps the resume path covered.
func TestOperationsFollowTheCascade(t *testing.T) {
	resumed := 0
	for _, sh := range append(reference.PyramidShapes(), reference.ResumableZStack()) {
		p, err := reference.PyramidPlan(sh, "p", "uint8", "mean", false, "none")
		if err != nil {
			t.Fatalf("%s: %v", sh.Name, err)
		}
		t.Run(sh.Name+"/from_the_start", func(t *testing.T) { check(t, p, 0) })
		align := p.ResumeAlign()
		if align%p.EpochFrames() != 0 || align/p.EpochFrames() >= p.Epochs() {
			continue
		}
		resumed++
		t.Run(sh.Name+"/from_its_resume_point", func(t *testing.T) { check(t, p, align/p.EpochFrames()) })
	}
	if resumed == 0 {
		t.Fatal("no shape has a resume point inside its data: the resume path is untested")
	}
}

func check(t *testing.T, p *pipeline.Plan, first int64) {
	st := pyramid.New(p)
	L := len(p.Levels)
	s := &frameSim{rows: make([][][]int64, L), pending: make([][]int64, L)}
	for l := 1; l < L; l++ {
		s.rows[l] = make([][]int64, st.Capacity(l))
	}
	total := p.Levels[0].Grid.Shape[0]
	next := make([]int64, L) // expected next row per level
	for l := 1; l < L; l++ {
		f := first * p.EpochFrames()
		if st.ZDown() {
			f >>= l
		}
		next[l] = f / st.RowCap(l)
	}
	seen := make([]int64, L) // level frames emitted
	run := func(ops []pyramid.Op) {
		for _, op := range ops {
			l := op.Level
			src := func(f int64) []int64 {
				if l == 1 {
					return s.epoch[f]
				}
				return s.rows[l-1][f]
			}
			switch op.Kind {
			case pyramid.Reduce:
				var v [][]int64
				if op.Pending {
					v = append(v, s.pending[l])
				}
				for f := int64(0); int64(len(v)) < op.Frames*op.NZ; f++ {
					v = append(v, src(op.Src+f))
				}
				for f := range op.Frames {
					var fr []int64
					for z := range op.NZ {
						fr = append(fr, v[f*op.NZ+z]...)
					}
					s.rows[l][op.Dst+f] = fr
				}
			case pyramid.Hold:
				s.pending[l] = src(op.Src)
			case pyramid.Compact:
				if op.Src < op.Frames {
					t.Fatalf("%v: overlapping move", op)
				}
				copy(s.rows[l], s.rows[l][op.Src:op.Src+op.Frames])
			case pyramid.Emit:
				if op.Row != next[l] {
					t.Fatalf("%v: row %d, want %d", op, op.Row, next[l])
				}
				rc := st.RowCap(l)
				if op.Rows != (op.Frames+rc-1)/rc || op.Rows > st.MaxRows(l) {
					t.Fatalf("%v: %d rows for %d frames of rows of %d (at most %d)", op, op.Rows, op.Frames, rc, st.MaxRows(l))
				}
				for f := range op.Frames {
					k := op.Row*rc + f // the frame's index in the level
					var want []int64
					if st.ZDown() {
						for i := k << l; i < min((k+1)<<l, total); i++ {
							want = append(want, i)
						}
					} else {
						want = []int64{k}
					}
					if fmt.Sprint(s.rows[l][f]) != fmt.Sprint(want) {
						t.Fatalf("level %d frame %d: from level-0 frames %v, want %v", l, k, s.rows[l][f], want)
					}
				}
				next[l] += op.Rows
				seen[l] += op.Frames
			}
		}
	}
	eb := p.EpochFrames()
	for e := first; e < p.Epochs(); e++ {
		n := min(eb, total-e*eb)
		s.epoch = make([][]int64, n)
		for f := range n {
			s.epoch[f] = []int64{e*eb + f}
		}
		run(st.Epoch(e, n))
	}
	run(st.Flush())
	if ops := st.Flush(); ops != nil {
		t.Fatalf("a second Flush: %v", ops)
	}
	for l := 1; l < L; l++ {
		g := p.Levels[l].Grid
		if next[l] != g.Chunks(0) {
			t.Errorf("level %d: rows up to %d, the level has %d", l, next[l], g.Chunks(0))
		}
		start := first * eb
		if st.ZDown() {
			start >>= l
		}
		if want := g.Shape[0] - start; seen[l] != want {
			t.Errorf("level %d: %d frames emitted, want %d", l, seen[l], want)
		}
	}
}
