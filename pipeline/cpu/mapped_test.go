package cpu_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/zspool/zspool/internal/acqtest"
	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/pipeline/cpu"
	"github.com/zspool/zspool/zstdlit/corpus"
)

// truncating is the CPU engine with a raw file cut to nothing just before
// it takes the epoch at index at: that epoch is mapped already, so the
// engine's reads of it fault.
type truncating struct {
	*cpu.Engine
	raw string
	at  int64
}

func (e *truncating) Encode(ctx context.Context, ep pipeline.Epoch) ([]pipeline.LevelOutput, error) {
	if ep.Index == e.at {
		if err := os.Truncate(e.raw, 0); err != nil {
			return nil, err
		}
	}
	return e.Engine.Encode(ctx, ep)
}

func TestARawFileThatShrinksUnderACPUConvertFailsItAsBadInput(t *testing.T) {
	cases := []struct {
		name   string
		rows   int
		levels int
	}{
		{"one row at a time, no pyramid", 1, 1},
		{"two rows in flight, no pyramid", 2, 1},
		{"two rows in flight, the pyramid reading the epoch too", 2, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			const frames, h, w = 8, 64, 64
			m := map[string]any{"version": 1, "dtype": "uint16", "name": "acq",
				"dimensions": []map[string]any{
					{"name": "t", "size": frames, "chunk": 2, "shard": 2},
					{"name": "y", "size": h, "chunk": 32, "shard": 2},
					{"name": "x", "size": w, "chunk": 32, "shard": 2},
				}}
			if c.levels > 1 {
				m["multiscale"] = map[string]any{"method": "mean", "levels": c.levels}
			}
			manifest := acqtest.Write(t, dir, m, corpus.Gaussian12(frames*h*w, 1500, 40, 3))
			src, p := openPlan(t, manifest, pipeline.Options{Workers: 3})
			if p.Epochs() < 4 {
				t.Fatalf("%d epochs: the case needs a few", p.Epochs())
			}
			p.EngineRows = c.rows
			dest := filepath.Join(dir, "out")
			te := &truncating{Engine: newEngine(t, p), raw: filepath.Join(dir, src.RawName), at: 1}
			_, err := pipeline.Convert(context.Background(), zap.NewNop(), src, p, te, localfs.New(dest), pipeline.ConvertOptions{})
			if !pipeline.IsInputError(err) {
				t.Fatalf("err = %v, want an input error", err)
			}
			if !strings.Contains(err.Error(), "changed while it was being read") && !strings.Contains(err.Error(), "shrank") {
				t.Fatalf("err = %v, want it to say the raw file shrank or changed", err)
			}
			if _, err := os.Stat(filepath.Join(dest, p.Root(), "zarr.json")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the group document of a failed convert: %v", fmt.Sprint(err))
			}
		})
	}
}

func TestTheCPUEngineReadsTheRawFileThroughAMapping(t *testing.T) {
	dir := t.TempDir()
	manifest, _ := encoderAcq(t, dir)
	src, p := openPlan(t, manifest, pipeline.Options{Workers: 2})
	core, logs := observer.New(zapcore.DebugLevel)
	if _, err := pipeline.Convert(context.Background(), zap.New(core), src, p, newEngine(t, p), localfs.New(filepath.Join(dir, "out")), pipeline.ConvertOptions{}); err != nil {
		t.Fatal(err)
	}
	start := logs.FilterMessage("convert start").All()
	if len(start) != 1 {
		t.Fatalf("%d \"convert start\" lines, want 1", len(start))
	}
	if how := start[0].ContextMap()["raw_epochs"]; how != "mapped" {
		t.Fatalf("the CPU engine's epochs are %v, want mapped: it would copy every raw byte once more", how)
	}
}
