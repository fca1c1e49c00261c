package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/zspool/zspool/destination"
	"github.com/zspool/zspool/zarr"
)

func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", "DATASET [--raw RAW]", stderr)
	rawPath := fs.String("raw", "", "the acquisition's raw file: level 0 must equal it byte for byte")
	quiet := fs.Bool("quiet", false, "no progress output")
	df := newDestFlags(fs)
	// verify only reads: the flags that shape writes would only clutter
	// its help.
	for _, name := range writeOnly {
		_ = fs.MarkHidden(name)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return missingArgs(fs, stderr, "dataset argument (DIR/acq.ome.zarr or s3://bucket/prefix/acq.ome.zarr)")
	}
	log, _ := newLogger(stderr, "info")
	df.dst.ConditionalWrites = "off" // verify only reads: no probe object is written
	dataset := fs.Arg(0)
	destSpec, root := destination.SplitDataset(dataset)
	store, err := openDest(ctx, log, destSpec, df, 0)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	ds, err := zarr.Open(ctx, store, root)
	if err != nil {
		if errors.Is(err, zarr.ErrNotFound) {
			return &exitError{code: 1, err: fmt.Errorf("%s: no dataset here (no zarr.json)%s", dataset, datasetHint(destSpec, root))}
		}
		return &exitError{code: 1, err: fmt.Errorf("%s: %w", dataset, err)}
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
	msg := fmt.Sprintf("%s: ok: %s, %s, %s decoded", dataset, plural(rep.Levels, "level"), plural(int(rep.Shards), "shard"), plural(int(rep.Chunks), "chunk"))
	if raw != nil {
		msg += fmt.Sprintf(", level 0 equals the raw file (%d bytes)", rep.RawCompared)
	}
	if ds.Plain {
		msg += "; a plain Zarr v3 group (its dimensions cannot be an OME-NGFF image)"
	} else {
		msg += "; OME-NGFF 0.5 metadata valid (strict schema)"
	}
	fmt.Fprintln(stdout, msg)
	return nil
}

// datasetHint points at the datasets inside a local directory that was
// given instead of one of them.
func datasetHint(destSpec, root string) string {
	if strings.Contains(destSpec, "://") && !strings.HasPrefix(destSpec, "file://") {
		return ""
	}
	dir := filepath.Join(strings.TrimPrefix(destSpec, "file://"), root)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var found []string
	for _, e := range entries {
		if e.IsDir() && strings.HasSuffix(e.Name(), ".ome.zarr") {
			found = append(found, filepath.Join(dir, e.Name()))
		}
	}
	if len(found) == 0 {
		return ""
	}
	return "; this directory holds " + strings.Join(found, ", ") + ": verify that"
}

// plural is "1 level", "2 levels".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
