package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/destination"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zarr"
)

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "[--out DIR]", stderr)
	out := fs.String("out", "zspool-demo", "where the spool and the output go")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, _ := newLogger(stderr, "info")
	spool := filepath.Join(*out, "spool")
	dest := filepath.Join(*out, "out")
	if err := os.MkdirAll(spool, 0o755); err != nil {
		return err
	}
	// 48 frames of 512×512: small enough to run in seconds, large enough
	// for several shard layers and ragged edges in neither dim.
	const frames, side = 48, 512
	raw := filepath.Join(spool, "demo_0001.raw")
	if err := writeSynthetic(ctx, raw, frames, side, side, nil); err != nil {
		return err
	}
	manifest := filepath.Join(spool, "demo_0001.json")
	if err := writeManifest(manifest, raw, "demo_0001", side, side, 128, "zstd", 1); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote a synthetic acquisition: %s + %s\n", raw, manifest)

	sink, err := destination.Open(ctx, log, destination.Config{Destination: config.Destination{URL: dest}})
	if err != nil {
		return err
	}
	src, err := pipeline.OpenSource(manifest)
	if err != nil {
		return err
	}
	defer src.Close()
	res, err := convertSource(ctx, log, src, sink, pipeline.Options{}, stderr, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "converted: in %s, out %s, ratio %.2f, %.2fs, %.2f GiB/s\n", gib(res.BytesIn), gib(res.BytesOut), res.Ratio(), res.Elapsed.Seconds(),
		float64(res.BytesIn)/(1<<30)/max(res.Elapsed.Seconds(), 1e-9))

	ds, err := zarr.Open(ctx, sink, "demo_0001.ome.zarr")
	if err != nil {
		return err
	}
	f, err := os.Open(raw)
	if err != nil {
		return err
	}
	defer f.Close()
	rep, err := zarr.Verify(ctx, ds, f, nil)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	fmt.Fprintf(stdout, "verified: %s, %s, level 0 equals the raw file\n", plural(int(rep.Shards), "shard"), plural(int(rep.Chunks), "chunk"))
	fmt.Fprintf(stdout, "dataset: %s\n", res.where)
	fmt.Fprintf(stdout, "view it: napari --plugin napari-ome-zarr %s\n", res.where)
	return nil
}
