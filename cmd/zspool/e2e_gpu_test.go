//go:build cuda

package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/zarr"
)

// TestConvertEngineGPUMatchesCPU is the GPU engine's acceptance test:
// `convert --engine gpu` and `--engine cpu` of the same inputs (every
// shape of the CPU-pipeline issue, every element size, both codecs)
// decode to identical arrays, equal to the raw file, with identical shard
// indexes slot by slot. It needs a GPU and a binary built with -tags cuda.
func TestConvertEngineGPUMatchesCPU(t *testing.T) {
	if desc, ok := gpuStatus(); !ok {
		t.Skipf("no usable GPU: %s", desc)
	}
	ctx := context.Background()
	seed := uint64(100)
	for _, codec := range []string{"none", "zstd"} {
		for _, sh := range issueShapes {
			for _, dt := range []string{"uint8", "int16", "float32", "int64"} {
				name := fmt.Sprintf("%s_%s_%s", sh.name, dt, codec)
				t.Run(name, func(t *testing.T) {
					spool := t.TempDir()
					a := newAcquisition(name, dt, sh.dims)
					a.manifest["compression"] = map[string]any{"codec": codec}
					seed++
					a.randomRaw(seed, elems(sh.dims))
					mp := a.write(t, spool)
					var arrays [2]*zarr.Array
					for i, engine := range []string{"cpu", "gpu"} {
						dest := t.TempDir()
						if _, stderr, err := zspool(t, "convert", mp, "--dest", dest, "--quiet", "--engine", engine); err != nil {
							t.Fatalf("convert --engine %s: %v\n%s", engine, err, stderr)
						}
						ds, err := zarr.Open(ctx, localfs.New(dest), name+".ome.zarr")
						if err != nil {
							t.Fatalf("%s: %v", engine, err)
						}
						arrays[i] = ds.Levels[0]
						dense, err := arrays[i].ReadAll(ctx)
						if err != nil {
							t.Fatalf("%s: read back: %v", engine, err)
						}
						if !bytes.Equal(dense, a.raw) {
							t.Fatalf("%s: the decoded array differs from %s", engine, filepath.Base(mp))
						}
					}
					sameShardIndexes(t, arrays[0], arrays[1])
				})
			}
		}
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
