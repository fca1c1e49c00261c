//go:build cuda

package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zspool/zspool/engine"
	"github.com/zspool/zspool/internal/dirdiff"
	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/zarr"
)

// TestConvertEngineGPUMatchesCPU is the GPU engine's acceptance test:
// `convert --engine gpu` and `--engine cpu` of the same inputs (every
// shape of the CPU-pipeline issue, every element size, both codecs)
// decode to identical arrays, equal to the raw file, with identical shard
// indexes slot by slot. Under zstd the GPU engine runs its own encoder and
// the CPU engine `--zstd-encoder lit`, so the shards must also be equal
// byte for byte, and the GPU's output passes `verify --raw`; zstd runs at
// level 1 and at level 3, the parse's two rungs. It needs a GPU and a
// binary built with -tags cuda.
func TestConvertEngineGPUMatchesCPU(t *testing.T) {
	if desc, ok := engine.GPUStatus(); !ok {
		t.Skipf("no usable GPU: %s", desc)
	}
	ctx := context.Background()
	seed := uint64(100)
	for _, codec := range []string{"none", "zstd", "zstd3"} {
		for _, sh := range issueShapes {
			for _, dt := range []string{"uint8", "int16", "float32", "int64"} {
				name := fmt.Sprintf("%s_%s_%s", sh.name, dt, codec)
				t.Run(name, func(t *testing.T) {
					spool := t.TempDir()
					a := newAcquisition(name, dt, sh.dims)
					a.manifest["compression"] = map[string]any{"codec": codec}
					if codec == "zstd3" {
						a.manifest["compression"] = map[string]any{"codec": "zstd", "level": 3}
					}
					seed++
					a.randomRaw(seed, elems(sh.dims))
					mp := a.write(t, spool)
					sets, dests := convertOnBoth(t, mp, codec, name)
					var arrays [2]*zarr.Array
					for i, engine := range engines {
						arrays[i] = sets[i].Levels[0]
						dense, err := arrays[i].ReadAll(ctx)
						if err != nil {
							t.Fatalf("%s: read back: %v", engine, err)
						}
						if !bytes.Equal(dense, a.raw) {
							t.Fatalf("%s: the decoded array differs from %s", engine, filepath.Base(mp))
						}
					}
					sameShardIndexes(t, arrays[0], arrays[1])
					if codec != "none" {
						sameFiles(t, filepath.Join(dests[0], name+".ome.zarr", "0"), filepath.Join(dests[1], name+".ome.zarr", "0"))
					}
					ds := filepath.Join(dests[1], name+".ome.zarr")
					if _, stderr, err := zspool(t, "verify", ds, "--raw", filepath.Join(spool, name+".raw"), "--quiet"); err != nil {
						t.Fatalf("verify --raw of the GPU's output: %v\n%s", err, stderr)
					}
				})
			}
		}
	}
}

// engines are the two convertOnBoth runs, in its order.
var engines = [2]string{"cpu", "gpu"}

// convertOnBoth converts the manifest at mp with `--engine cpu` (running
// `--zstd-encoder lit` under zstd, the GPU encoder's reference) and with
// `--engine gpu`, each into a directory of its own, and opens the datasets.
func convertOnBoth(t *testing.T, mp, codec, name string) (sets [2]*zarr.Dataset, dests [2]string) {
	t.Helper()
	for i, engine := range engines {
		dests[i] = t.TempDir()
		args := []string{"convert", mp, "--dest", dests[i], "--quiet", "--engine", engine}
		if engine == "cpu" && codec != "none" {
			args = append(args, "--zstd-encoder", "lit")
		}
		if _, stderr, err := zspool(t, args...); err != nil {
			t.Fatalf("convert --engine %s: %v\n%s", engine, err, stderr)
		}
		ds, err := zarr.Open(context.Background(), localfs.New(dests[i]), name+".ome.zarr")
		if err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		sets[i] = ds
	}
	return sets, dests
}

// sameFiles compares every file under two directories byte for byte.
func sameFiles(t *testing.T, cpuDir, gpuDir string) {
	t.Helper()
	if _, err := dirdiff.Same(cpuDir, gpuDir); err != nil {
		t.Fatalf("the GPU engine's files differ from the CPU engine's: %v", err)
	}
}

// sameShardIndexes compares every shard index of two arrays slot by slot:
// present or absent, and the stored size.
func sameShardIndexes(t *testing.T, cpu, gpu *zarr.Array) {
	t.Helper()
	ctx := context.Background()
	extent := make([]int64, cpu.Grid.Rank())
	for d := range extent {
		extent[d] = cpu.Grid.Shards(d)
	}
	err := zarr.ForEach(extent, func(g []int64) error {
		want, _, err := cpu.ReadIndex(ctx, g)
		if err != nil {
			return fmt.Errorf("cpu: %w", err)
		}
		got, _, err := gpu.ReadIndex(ctx, g)
		if err != nil {
			return fmt.Errorf("gpu: %w", err)
		}
		for s := range want {
			if got[s].Present() != want[s].Present() || got[s].NBytes != want[s].NBytes {
				return fmt.Errorf("shard %v slot %d: present %v (%d bytes), want %v (%d bytes)",
					g, s, got[s].Present(), got[s].NBytes, want[s].Present(), want[s].NBytes)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestConvertPyramidGPUMatchesCPU is the GPU half of the multiscale
// acceptance: `convert --engine gpu` and `--engine cpu` of every method ×
// pyramid shape × dtype (64-bit integers at their extremes, whose sums
// overflow 64 bits; float32 and float64) in both byte orders, zstd and
// none alternating, decode to identical arrays at every level, equal to
// the plain-loop cascade, with identical shard indexes slot by slot.
func TestConvertPyramidGPUMatchesCPU(t *testing.T) {
	if desc, ok := engine.GPUStatus(); !ok {
		t.Skipf("no usable GPU: %s", desc)
	}
	ctx := context.Background()
	dts := []string{"uint8", "int16", "uint32", "uint64", "int64", "float32", "float64"}
	seed := uint64(500)
	for mi, method := range []string{"mean", "min", "max", "decimate"} {
		for si, pc := range pyramidShapes {
			for di, dt := range dts {
				for _, bigEndian := range []bool{false, true} {
					codec := "none"
					if (mi+si+di)%2 == 1 {
						codec = "zstd"
					}
					name := fmt.Sprintf("%s_%s_%s_%s", method, pc.name, dt, codec)
					if bigEndian {
						name += "_big"
					}
					t.Run(name, func(t *testing.T) {
						a := pyramidAcquisition(name, dt, pc, method)
						a.manifest["compression"] = map[string]any{"codec": codec}
						if codec == "zstd3" {
							a.manifest["compression"] = map[string]any{"codec": "zstd", "level": 3}
						}
						if bigEndian {
							a.manifest["byte_order"] = "big"
						}
						seed++
						n := elems(pc.dims)
						fillExtreme(a, seed, n)
						if bigEndian && (dt == "uint64" || dt == "int64") {
							// fillExtreme writes its extremes little
							// endian: keep them extreme in the declared
							// order.
							for i := int64(0); i < n; i++ {
								slices.Reverse(a.raw[i*8 : i*8+8])
							}
						}
						mp := a.write(t, t.TempDir())
						sets, _ := convertOnBoth(t, mp, codec, name)
						if len(sets[0].Levels) < 2 || len(sets[1].Levels) != len(sets[0].Levels) {
							t.Fatalf("gpu wrote %d levels, cpu %d", len(sets[1].Levels), len(sets[0].Levels))
						}
						shape := make([]int64, len(pc.dims))
						for d, dm := range pc.dims {
							shape[d] = dm.size
						}
						ref := decodeRef(a.raw, dt, bigEndian, shape)
						for l := range sets[0].Levels {
							if l > 0 {
								ref = downsampleRef(ref, pc.space, method, strings.HasPrefix(dt, "float"))
								if dt == "float32" {
									for k, v := range ref.flts {
										ref.flts[k] = float64(float32(v))
									}
								}
							}
							want, err := sets[0].Levels[l].ReadAll(ctx)
							if err != nil {
								t.Fatalf("cpu level %d: %v", l, err)
							}
							got, err := sets[1].Levels[l].ReadAll(ctx)
							if err != nil {
								t.Fatalf("gpu level %d: %v", l, err)
							}
							if !bytes.Equal(got, want) {
								t.Fatalf("level %d (shape %v): the GPU engine's array differs from the CPU engine's", l, sets[0].Levels[l].Grid.Shape)
							}
							if !bytes.Equal(got, ref.encode(dt, bigEndian)) {
								t.Fatalf("level %d: both engines differ from the plain-loop reference", l)
							}
							sameShardIndexes(t, sets[0].Levels[l], sets[1].Levels[l])
						}
					})
				}
			}
		}
	}
}
