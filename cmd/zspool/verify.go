package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/zspool/zspool/destination"
	"github.com/zspool/zspool/s3sink"
	"github.com/zspool/zspool/zarr"
)

func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", "DATASET [--raw RAW]", stderr)
	rawPath := fs.String("raw", "", "the acquisition's raw file: level 0 must equal it byte for byte")
	quiet := fs.Bool("quiet", false, "no progress output")
	var sf s3Flags
	sf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return &exitError{code: 2, err: errUsageShown}
	}
	log, _ := newLogger(stderr, "info")
	sf.conditional = "off" // verify only reads: no probe object is written
	dataset := fs.Arg(0)
	destSpec, root := destination.SplitDataset(dataset)
	store, err := openDest(ctx, log, destSpec, &sf, s3sink.DefaultPartSize)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	ds, err := zarr.Open(ctx, store, root)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	var raw io.ReaderAt
	total := ds.Levels[0].Grid.Shape[0] * ds.Levels[0].FrameBytes()
	if *rawPath != "" {
		f, err := os.Open(*rawPath)
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("--raw: %w", err)}
		}
		defer f.Close()
		raw = f
	}
	bar := newProgress(stderr, log, "verifying "+root, total, *quiet)
	rep, err := zarr.Verify(ctx, ds, raw, bar.Set)
	bar.Done()
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("%s: FAILED: %w", dataset, err)}
	}
	msg := fmt.Sprintf("%s: ok: %d levels, %d shards, %d chunks decoded", dataset, rep.Levels, rep.Shards, rep.Chunks)
	if raw != nil {
		msg += fmt.Sprintf(", level 0 equals the raw file (%d bytes)", rep.RawCompared)
	}
	fmt.Fprintln(stdout, msg)
	return nil
}
