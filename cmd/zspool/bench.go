package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/zspool/zspool/pipeline"
)

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", "[flags]", stderr)
	size := fs.String("size", "2GiB", "synthetic input size (whole 2048×2048 uint16 frames)")
	frame := fs.Int64("frame", 2048, "frame height and width in pixels")
	chunk := fs.Int64("chunk", 256, "chunk height and width in pixels")
	codec := fs.String("codec", "zstd", "zstd or none")
	level := fs.Int("level", 1, "zstd level")
	keep := fs.String("keep", "", "write the synthetic raw file here and keep it (to compare other tools on the same bytes)")
	var ef engineFlags
	ef.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	total, err := parseSize(*size)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--size: %w", err)}
	}
	opts, err := ef.options()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	log, _ := newLogger(stderr, "info")
	frameBytes := *frame * *frame * 2
	frames := max(1, total/frameBytes)

	dir, err := os.MkdirTemp("", "zspool-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	raw := filepath.Join(dir, "bench.raw")
	if *keep != "" {
		raw = *keep
	}
	bar := newProgress(stderr, log, "generating", frames*frameBytes, false)
	err = writeSynthetic(ctx, raw, frames, *frame, *frame, bar.Set)
	bar.Done()
	if err != nil {
		return err
	}
	manifest := filepath.Join(filepath.Dir(raw), "bench.json")
	if err := writeManifest(manifest, raw, "bench", *frame, *frame, *chunk, *codec, *level); err != nil {
		return err
	}
	defer os.Remove(manifest)

	src, err := pipeline.OpenSource(manifest)
	if err != nil {
		return err
	}
	defer src.Close()
	plan, err := pipeline.NewPlan(src.Manifest, src.RawName, src.RawSize, opts)
	if err != nil {
		return err
	}
	eng, err := pipeline.NewCPU(plan)
	if err != nil {
		return err
	}
	defer eng.Close()
	sink := &pipeline.Discard{}
	res, err := pipeline.Convert(ctx, log, src, plan, eng, sink, pipeline.ConvertOptions{Version: buildVersion()})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "engine cpu, %d workers, %d frames of %d×%d uint16 (gaussian/uniform/constant 12-bit), chunk %d×%d, codec %s level %d\n",
		plan.Options.Workers, frames, *frame, *frame, *chunk, *chunk, *codec, *level)
	pipeline.WriteStageTable(stdout, res.Stages)
	fmt.Fprintf(stdout, "end-to-end: in %.3f GB, out %.3f GB, ratio %.4f, %.3f s, %.3f GB/s (%.3f GiB/s)\n",
		float64(res.BytesIn)/1e9, float64(res.BytesOut)/1e9, res.Ratio(), res.Elapsed.Seconds(),
		float64(res.BytesIn)/1e9/res.Elapsed.Seconds(), float64(res.BytesIn)/(1<<30)/res.Elapsed.Seconds())
	return nil
}
