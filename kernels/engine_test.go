//go:build cuda

package kernels

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/zspool/zspool/internal/dirdiff"
	"github.com/zspool/zspool/kernels/internal/reference"
	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/pipeline"
	cpuengine "github.com/zspool/zspool/pipeline/cpu"
	"github.com/zspool/zspool/zarr"
)

// acquisition is a test input written to disk: manifest and raw file.
type acquisition struct {
	name     string
	manifest string // path
	raw      []byte
}

var dtypes = map[int]string{1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}

// writeAcquisition writes a random raw file of the whole array g (with
// stretches of fill, so some chunks are absent) and its manifest.
func writeAcquisition(t *testing.T, dir, name string, g zarr.Grid, elem int, codec string, rng *rand.Rand) *acquisition {
	t.Helper()
	n := int64(elem)
	dims := make([]map[string]any, g.Rank())
	for d := range dims {
		n *= g.Shape[d]
		dims[d] = map[string]any{"name": string(rune('a' + d)), "size": g.Shape[d], "chunk": g.Chunk[d], "shard": g.Shard[d]}
	}
	a := &acquisition{name: name, raw: reference.Raw(rng, n)}
	m, err := json.Marshal(map[string]any{"version": 1, "name": name, "data": name + ".raw", "dtype": dtypes[elem],
		"dimensions": dims, "compression": map[string]any{"codec": codec}})
	if err != nil {
		t.Fatal(err)
	}
	a.manifest = filepath.Join(dir, name+".json")
	if err := os.WriteFile(filepath.Join(dir, name+".raw"), a.raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.manifest, m, 0o644); err != nil {
		t.Fatal(err)
	}
	return a
}

// plan opens the acquisition and plans it for the GPU engine (gpu) or
// the CPU engine.
func (a *acquisition) plan(t *testing.T, gpu bool) (*pipeline.Source, *pipeline.Plan) {
	t.Helper()
	src, err := pipeline.OpenSource(a.manifest)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	p, err := pipeline.NewPlan(src.Manifest, src.RawName, src.RawSize, pipeline.Options{GPU: gpu})
	if err != nil {
		t.Fatal(err)
	}
	return src, p
}

// codecCases are what the engines are compared under: codec none; zstd
// with the GPU's own encoder (the default), against the CPU engine running
// zstdlit, so stored bytes must match byte for byte; zstd compressed by
// both on the CPU with klauspost, and with the windowed encoder (the CPU
// engine's default, named on the GPU engine); and the GPU's zstd with
// checksums.
type codecCase struct {
	name, codec, cpu, gpu string
	ck                    bool // zstd's content checksum
}

var codecCases = []codecCase{
	{"none", "none", "", "", false},
	{"zstd", "zstd", pipeline.EncoderLit, pipeline.EncoderDefault, false},
	{"zstd-checksum", "zstd", pipeline.EncoderLit, pipeline.EncoderDefault, true},
	{"zstd-klauspost", "zstd", pipeline.EncoderKlauspost, pipeline.EncoderKlauspost, false},
	{"zstd-window", "zstd", pipeline.EncoderDefault, pipeline.EncoderWindow, false},
}

// newEngines makes the two engines cc compares, the CPU engine and the GPU
// engine on d, closed when the test ends; p is left with the GPU's options.
func newEngines(t *testing.T, d *Device, p *pipeline.Plan, cc codecCase) (cpu, gpu pipeline.Engine) {
	t.Helper()
	p.Options.ZstdEncoder, p.Options.ZstdChecksum = cc.cpu, cc.ck
	c, err := cpuengine.New(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p.Options.ZstdEncoder = cc.gpu
	g, err := NewEngine(d, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return c, g
}

// convertBoth converts acquisition a with the CPU engine, then the GPU
// engine on d, each through pipeline.Convert into a directory of its own
// under the encoders cc names, and opens both datasets.
func convertBoth(t *testing.T, d *Device, a *acquisition, cc codecCase, name string) ([2]*zarr.Dataset, [2]string) {
	t.Helper()
	ctx := context.Background()
	var sets [2]*zarr.Dataset
	var roots [2]string
	for i, kind := range []string{"cpu", "gpu"} {
		// Each engine's own plan, as convert makes it: a plan for the CPU
		// lends its rows to the store on a host of 4 or more cores, and
		// the store refuses the GPU engine's rows, which are not lent.
		src, p := a.plan(t, kind == "gpu")
		p.Options.ZstdChecksum = cc.ck
		var eng pipeline.Engine
		var err error
		if kind == "cpu" {
			p.Options.ZstdEncoder = cc.cpu
			eng, err = cpuengine.New(p)
		} else {
			p.Options.ZstdEncoder = cc.gpu
			eng, err = NewEngine(d, p)
		}
		if err != nil {
			t.Fatal(err)
		}
		roots[i] = t.TempDir()
		dir := localfs.New(roots[i])
		_, err = pipeline.Convert(ctx, zap.NewNop(), src, p, eng, dir, pipeline.ConvertOptions{Version: "test"})
		eng.Close()
		if err != nil {
			t.Fatalf("%s: convert: %v", kind, err)
		}
		if sets[i], err = zarr.Open(ctx, dir, name+".ome.zarr"); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
	}
	return sets, roots
}

// engineCases are the issue's shapes plus shapes of many epochs (the GPU
// pipeline runs two epochs deep) and random ones.
func engineCases(rng *rand.Rand) []reference.Shape {
	cases := reference.IssueShapes()
	cases = append(cases,
		reference.Shape{Name: "many_epochs", Grid: zarrGrid([]int64{37, 100, 130}, []int64{4, 32, 64}, []int64{3, 2, 2}), Elem: 1},
		reference.Shape{Name: "many_epochs_5d", Grid: zarrGrid([]int64{9, 2, 5, 17, 33}, []int64{2, 1, 2, 8, 16}, []int64{2, 2, 2, 2, 1}), Elem: 8},
	)
	for i := range 4 {
		sh := reference.RandomShape(rng)
		sh.Name = fmt.Sprintf("random%d", i)
		cases = append(cases, sh)
	}
	return cases
}

// rows runs an engine over the raw array epoch by epoch, with epochs in
// ordinary (pageable) memory, and keeps a copy of every chunk row.
func rows(t *testing.T, eng pipeline.Engine, p *pipeline.Plan, raw []byte) []pipeline.LevelOutput {
	t.Helper()
	ctx := context.Background()
	var out []pipeline.LevelOutput
	epochBytes := p.EpochBytes()
	for e := range p.Epochs() {
		data := raw[e*epochBytes : min(int64(len(raw)), (e+1)*epochBytes)]
		outs, err := eng.Encode(ctx, pipeline.Epoch{Index: e, Frames: int64(len(data)) / p.FrameBytes, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			// Kept whole, lent rows given back: on a host whose cores
			// make the plan lend the CPU engine's rows, keeping them
			// without giving them back hung the test.
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
	return out
}

// TestEngineRowsMatchCPU compares the GPU engine's chunk rows with the CPU
// engine's: same shards, slots and absent chunks, and the same stored
// bytes (both compress the same chunk bytes with the same encoder).
func TestEngineRowsMatchCPU(t *testing.T) {
	d := openDevice(t)
	rng := rand.New(rand.NewPCG(11, 12))
	for _, cc := range codecCases {
		for _, sh := range engineCases(rng) {
			t.Run(cc.name+"/"+sh.Name, func(t *testing.T) {
				a := writeAcquisition(t, t.TempDir(), sh.Name, sh.Grid, sh.Elem, cc.codec, rng)
				_, p := a.plan(t, false)
				cpu, gpu := newEngines(t, d, p, cc)
				want, got := rows(t, cpu, p, a.raw), rows(t, gpu, p, a.raw)
				if len(got) != len(want) {
					t.Fatalf("%d chunk rows, want %d", len(got), len(want))
				}
				for r := range want {
					if err := sameRow(got[r], want[r]); err != nil {
						t.Fatalf("row %d: %v", r, err)
					}
				}
			})
		}
	}
}

func sameRow(got, want pipeline.LevelOutput) error {
	if got.Level != want.Level || got.Epoch != want.Epoch || len(got.Shards) != len(want.Shards) {
		return fmt.Errorf("level %d epoch %d with %d shards, want level %d epoch %d with %d",
			got.Level, got.Epoch, len(got.Shards), want.Level, want.Epoch, len(want.Shards))
	}
	for s := range want.Shards {
		g, w := got.Shards[s], want.Shards[s]
		if g.Inner != w.Inner || len(g.Chunks) != len(w.Chunks) {
			return fmt.Errorf("shard %d: inner %d with %d chunks, want %d with %d", s, g.Inner, len(g.Chunks), w.Inner, len(w.Chunks))
		}
		for c := range w.Chunks {
			gc, wc := g.Chunks[c], w.Chunks[c]
			if gc.Slot != wc.Slot || (gc.Data == nil) != (wc.Data == nil) || !bytes.Equal(gc.Data, wc.Data) {
				at := 0
				for at < min(len(gc.Data), len(wc.Data)) && gc.Data[at] == wc.Data[at] {
					at++
				}
				lo := max(0, at-8)
				return fmt.Errorf("shard %d chunk %d: slot %d, %d bytes (absent %v); want slot %d, %d bytes (absent %v); first difference at byte %d: % x, want % x",
					s, c, gc.Slot, len(gc.Data), gc.Data == nil, wc.Slot, len(wc.Data), wc.Data == nil, at,
					gc.Data[lo:min(len(gc.Data), at+24)], wc.Data[lo:min(len(wc.Data), at+24)])
			}
		}
	}
	return nil
}

// TestConvertMatchesCPU converts each acquisition with both engines
// through pipeline.Convert (the GPU engine reading into its pinned
// staging) into two directories, then decodes both and compares the
// arrays, the raw file and every shard index slot by slot.
func TestConvertMatchesCPU(t *testing.T) {
	d := openDevice(t)
	rng := rand.New(rand.NewPCG(13, 14))
	ctx := context.Background()
	for _, cc := range codecCases {
		for _, sh := range engineCases(rng) {
			t.Run(cc.name+"/"+sh.Name, func(t *testing.T) {
				spool := t.TempDir()
				a := writeAcquisition(t, spool, sh.Name, sh.Grid, sh.Elem, cc.codec, rng)
				var arrays [2]*zarr.Array
				sets, roots := convertBoth(t, d, a, cc, sh.Name)
				for i, kind := range []string{"cpu", "gpu"} {
					ds := sets[i]
					arrays[i] = ds.Levels[0]
					dense, err := arrays[i].ReadAll(ctx)
					if err != nil {
						t.Fatalf("%s: read back: %v", kind, err)
					}
					if !bytes.Equal(dense, a.raw) {
						t.Fatalf("%s: the decoded array differs from the raw file", kind)
					}
				}
				sameIndexes(t, arrays[0], arrays[1])
				if cc.cpu == pipeline.EncoderLit {
					sameShardFiles(t, filepath.Join(roots[0], sh.Name+".ome.zarr", "0"), filepath.Join(roots[1], sh.Name+".ome.zarr", "0"))
				}
			})
		}
	}
}

// sameShardFiles compares every file under two array directories byte for
// byte: the GPU encoder and zstdlit must write the same shards.
func sameShardFiles(t *testing.T, cpuDir, gpuDir string) {
	t.Helper()
	n, err := dirdiff.Same(cpuDir, gpuDir)
	if err != nil {
		t.Fatalf("the GPU engine's shards differ from the CPU engine's: %v", err)
	}
	t.Logf("%d files byte-identical", n)
}

// sameIndexes compares every shard's index, slot by slot: present or
// absent, and the stored size.
func sameIndexes(t *testing.T, cpu, gpu *zarr.Array) {
	t.Helper()
	ctx := context.Background()
	g := cpu.Grid
	extent := make([]int64, g.Rank())
	for d := range extent {
		extent[d] = g.Shards(d)
	}
	var present int
	err := zarr.ForEach(extent, func(sc []int64) error {
		want, _, err := cpu.ReadIndex(ctx, sc)
		if err != nil {
			return fmt.Errorf("cpu: %w", err)
		}
		got, _, err := gpu.ReadIndex(ctx, sc)
		if err != nil {
			return fmt.Errorf("gpu: %w", err)
		}
		for s := range want {
			if got[s].Present() != want[s].Present() || got[s].NBytes != want[s].NBytes {
				return fmt.Errorf("shard %v slot %d: present %v (%d bytes), want %v (%d bytes)",
					sc, s, got[s].Present(), got[s].NBytes, want[s].Present(), want[s].NBytes)
			}
			if want[s].Present() {
				present++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d shards, %d chunks present", g.ShardCount(), present)
}
