//go:build cuda

package kernels

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/kernels/internal/layout"
	"github.com/zspool/zspool/kernels/internal/reference"
	"github.com/zspool/zspool/pipeline"
	cpuengine "github.com/zspool/zspool/pipeline/cpu"
	"github.com/zspool/zspool/zarr"
)

// runReduce launches one reduce kernel on poisoned buffers and returns the
// nOut frames it wrote.
func (d *Device) runReduce(r *layout.Reduce, pend, src []byte, hasP bool, nOut, nz int64) ([]byte, error) {
	out := make([]byte, nOut*int64(r.OutFrame))
	err := d.do(func() error {
		var ptrs [3]cu.DevicePtr
		defer func() {
			for _, p := range ptrs {
				if p != 0 {
					cu.MemFree(p)
				}
			}
		}()
		for i, b := range [][]byte{out, pend, src} {
			var err error
			if ptrs[i], err = cu.MemAlloc(int64(max(len(b), 8))); err != nil {
				return err
			}
			if err := cu.MemsetD8(ptrs[i], 0xa5, int64(max(len(b), 8))); err != nil {
				return err
			}
			if i > 0 && len(b) > 0 {
				if err := cu.MemcpyHtoD(ptrs[i], unsafe.Pointer(&b[0]), int64(len(b))); err != nil {
					return err
				}
			}
		}
		rk, err := d.prepareReduce(r)
		if err != nil {
			return err
		}
		defer cu.MemFree(rk.dParams)
		s, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return err
		}
		defer s.Destroy()
		if err := d.reduce(s, rk, ptrs[0], ptrs[1], ptrs[2], hasP, nOut, nz); err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return fmt.Errorf("reduce kernel: %w", err)
		}
		return cu.MemcpyDtoH(unsafe.Pointer(&out[0]), ptrs[0], int64(len(out)))
	})
	return out, err
}

// TestReduceKernelsMatchTheCPUReducer runs every kind × method kernel on
// random frames of random shapes (pairs along dim 0 with and without a
// pending frame, and single frames) against pipeline.Reducer, in both
// byte orders.
func TestReduceKernelsMatchTheCPUReducer(t *testing.T) {
	d := openDevice(t)
	rng := rand.New(rand.NewPCG(31, 32))
	for kind, dt := range reference.DTypes {
		for meth, method := range reference.Methods {
			t.Run(fmt.Sprintf("%s/%s", dt, method), func(t *testing.T) {
				for c := range 12 {
					big := c%2 == 1
					k := rng.IntN(4)
					if c == 0 {
						k = 0 // 1-D: one element a frame
					}
					in, out, half := make([]int64, k), make([]int64, k), make([]bool, k)
					for i := range k {
						in[i] = 1 + rng.Int64N(int64([]int{40, 30, 9, 5}[k-1]))
						half[i] = rng.IntN(4) != 0
						out[i] = in[i]
						if half[i] {
							out[i] = (in[i] + 1) / 2
						}
					}
					r, err := layout.NewReduce(in, out, half, dt.Size(), kind, meth, big)
					if err != nil {
						t.Fatal(err)
					}
					nz := int64(1 + c%2) // pairs along dim 0 for odd c
					hasP := nz == 2 && rng.IntN(2) == 0
					nOut := 1 + rng.Int64N(5)
					srcFrames := nOut * nz
					if hasP {
						srcFrames--
					}
					pend := reference.PyramidRaw(rng, dt, big, int64(r.InFrame)/int64(dt.Size()))
					src := reference.PyramidRaw(rng, dt, big, srcFrames*int64(r.InFrame)/int64(dt.Size()))
					got, err := d.runReduce(r, pend, src, hasP, nOut, nz)
					if err != nil {
						t.Fatal(err)
					}
					order := "little"
					if big {
						order = "big"
					}
					red, err := pipeline.NewReducer(&config.Manifest{DType: dt, ByteOrder: order, Multiscale: &config.Multiscale{Method: method}})
					if err != nil {
						t.Fatal(err)
					}
					frames := [][]byte{}
					if hasP {
						frames = append(frames, pend)
					}
					for f := range srcFrames {
						frames = append(frames, src[f*int64(r.InFrame):(f+1)*int64(r.InFrame)])
					}
					want := make([]byte, len(got))
					for f := range nOut {
						red.Reduce(want[f*int64(r.OutFrame):(f+1)*int64(r.OutFrame)], frames[f*nz:(f+1)*nz], in, out, half)
					}
					if !bytes.Equal(got, want) {
						i := 0
						for got[i] == want[i] {
							i++
						}
						t.Fatalf("in %v out %v half %v big %v nz %d pending %v frames %d: byte %d of %d differs: got %#x, want %#x",
							in, out, half, big, nz, hasP, nOut, i, len(want), got[i], want[i])
					}
				}
			})
		}
	}
}

// pyramidRows is rows with every level's rows in (level, row) order:
// engines may interleave levels differently, each level's rows come in
// order. epochs from first on; raw starts at epoch first.
func pyramidRows(t *testing.T, eng pipeline.Engine, p *pipeline.Plan, raw []byte, first int64) []pipeline.LevelOutput {
	t.Helper()
	ctx := context.Background()
	var out []pipeline.LevelOutput
	eb := p.EpochBytes()
	for e := int64(0); e*eb < int64(len(raw)); e++ {
		data := raw[e*eb : min(int64(len(raw)), (e+1)*eb)]
		outs, err := eng.Encode(ctx, pipeline.Epoch{Index: first + e, Frames: int64(len(data)) / p.FrameBytes, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			out = append(out, pipeline.Keep(o))
		}
	}
	outs, err := eng.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		out = append(out, pipeline.Keep(o))
	}
	slices.SortStableFunc(out, func(a, b pipeline.LevelOutput) int {
		if a.Level != b.Level {
			return a.Level - b.Level
		}
		return int(a.Epoch - b.Epoch)
	})
	return out
}

func samePyramidRows(got, want []pipeline.LevelOutput) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d chunk rows, want %d", len(got), len(want))
	}
	for r := range want {
		if err := sameRow(got[r], want[r]); err != nil {
			return fmt.Errorf("row %d (level %d row %d): %v", r, want[r].Level, want[r].Epoch, err)
		}
	}
	return nil
}

// TestEnginePyramidRowsMatchCPU compares every level's chunk rows of the
// GPU engine with the CPU engine's for every method × pyramid shape ×
// dtype × byte order (codec none: the chunk bytes themselves; zstd for a
// subset of dtypes: the stored bytes). Each GPU engine runs the stream
// twice, so Flush leaves it ready for another.
func TestEnginePyramidRowsMatchCPU(t *testing.T) {
	d := openDevice(t)
	rng := rand.New(rand.NewPCG(33, 34))
	for _, cc := range codecCases {
		for _, method := range reference.Methods {
			for _, sh := range append(reference.PyramidShapes(), reference.ResumableZStack()) {
				for _, dt := range reference.DTypes {
					if cc.codec == "zstd" && dt != "uint16" && dt != "int64" && dt != "float32" {
						continue
					}
					for _, big := range []bool{false, true} {
						name := fmt.Sprintf("%s/%s/%s/%s/big%v", cc.name, method, sh.Name, dt, big)
						t.Run(name, func(t *testing.T) {
							p, err := reference.PyramidPlan(sh, "pyr", dt, method, big, cc.codec)
							if err != nil {
								t.Fatal(err)
							}
							if len(p.Levels) < 2 {
								t.Fatalf("%d levels, want a pyramid", len(p.Levels))
							}
							raw := reference.PyramidRaw(rng, dt, big, sh.Elems())
							cpu, gpu := newEngines(t, d, p, cc)
							want := pyramidRows(t, cpu, p, raw, 0)
							for pass := range 2 {
								if err := samePyramidRows(pyramidRows(t, gpu, p, raw, 0), want); err != nil {
									t.Fatalf("pass %d: %v", pass, err)
								}
							}
						})
					}
				}
			}
		}
	}
}

// TestEnginePyramidResumed starts both engines at a resume point inside
// the data, so every level numbers its rows from the first epoch seen.
func TestEnginePyramidResumed(t *testing.T) {
	d := openDevice(t)
	rng := rand.New(rand.NewPCG(35, 36))
	resumed := 0
	for _, sh := range append(reference.PyramidShapes(), reference.ResumableZStack()) {
		p, err := reference.PyramidPlan(sh, "resume", "int32", "mean", true, "none")
		if err != nil {
			t.Fatal(err)
		}
		first, ok := reference.ResumeEpoch(p)
		if !ok {
			continue
		}
		raw := reference.PyramidRaw(rng, "int32", true, sh.Elems())[first*p.EpochBytes():]
		cpu, err := cpuengine.New(p)
		if err != nil {
			t.Fatal(err)
		}
		gpu, err := NewEngine(d, p)
		if err != nil {
			t.Fatal(err)
		}
		err = samePyramidRows(pyramidRows(t, gpu, p, raw, first), pyramidRows(t, cpu, p, raw, first))
		cpu.Close()
		gpu.Close()
		if err != nil {
			t.Fatalf("%s from epoch %d: %v", sh.Name, first, err)
		}
		resumed++
	}
	if resumed < 3 {
		t.Fatalf("only %d shapes have a resume point inside the data", resumed)
	}
}

// TestConvertPyramidMatchesCPU converts pyramids with both engines through
// pipeline.Convert (the GPU engine reading into its pinned staging) and
// compares every level decoded, and every shard index slot by slot.
func TestConvertPyramidMatchesCPU(t *testing.T) {
	d := openDevice(t)
	rng := rand.New(rand.NewPCG(37, 38))
	ctx := context.Background()
	for _, cc := range codecCases {
		codec := cc.codec
		for _, method := range reference.Methods {
			for _, sh := range append(reference.PyramidShapes(), reference.ResumableZStack()) {
				dt := []zarr.DType{"uint16", "int64", "float64", "int8"}[rng.IntN(4)]
				big := rng.IntN(2) == 0
				name := fmt.Sprintf("%s_%s_%s_%s", cc.name, method, sh.Name, dt)
				t.Run(name, func(t *testing.T) {
					spool := t.TempDir()
					raw := reference.PyramidRaw(rng, dt, big, sh.Elems())
					if err := os.WriteFile(filepath.Join(spool, name+".raw"), raw, 0o644); err != nil {
						t.Fatal(err)
					}
					mp := filepath.Join(spool, name+".json")
					if err := os.WriteFile(mp, reference.PyramidManifest(sh, name, dt, method, big, codec), 0o644); err != nil {
						t.Fatal(err)
					}
					a := &acquisition{name: name, manifest: mp, raw: raw}
					sets, _ := convertBoth(t, d, a, cc, name)
					if len(sets[1].Levels) != len(sets[0].Levels) || len(sets[0].Levels) < 2 {
						t.Fatalf("gpu %d levels, cpu %d", len(sets[1].Levels), len(sets[0].Levels))
					}
					for l := range sets[0].Levels {
						want, err := sets[0].Levels[l].ReadAll(ctx)
						if err != nil {
							t.Fatal(err)
						}
						got, err := sets[1].Levels[l].ReadAll(ctx)
						if err != nil {
							t.Fatal(err)
						}
						if l == 0 && !bytes.Equal(want, raw) {
							t.Fatal("cpu: level 0 differs from the raw file")
						}
						if !bytes.Equal(got, want) {
							t.Fatalf("level %d: the GPU engine's array differs from the CPU engine's", l)
						}
						sameIndexes(t, sets[0].Levels[l], sets[1].Levels[l])
					}
				})
			}
		}
	}
}
