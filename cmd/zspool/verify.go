package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/zarr"
)

func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", "DATASET [--raw RAW]", stderr)
	rawPath := fs.String("raw", "", "the acquisition's raw file: level 0 must equal it byte for byte")
	quiet := fs.Bool("quiet", false, "no progress output")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return &exitError{code: 2, err: errUsageShown}
	}
	log, _ := newLogger(stderr, "info")
	dataset := strings.TrimSuffix(strings.TrimPrefix(fs.Arg(0), "file://"), "/")
	store := localfs.New(filepath.Dir(dataset))
	ds, err := zarr.Open(ctx, store, filepath.Base(dataset))
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
	bar := newProgress(stderr, log, "verifying "+filepath.Base(dataset), total, *quiet)
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
