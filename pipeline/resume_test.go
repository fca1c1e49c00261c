package pipeline_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"go.uber.org/zap"

	"github.com/zspool/zspool/internal/acqtest"
	"github.com/zspool/zspool/internal/dirdiff"
	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/pipeline/cpu"
)

var errCrash = errors.New("simulated crash")

func convert(t *testing.T, manifest, dest string, first int64, onResume func(int64) error) error {
	t.Helper()
	src, err := pipeline.OpenSource(manifest)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	p, err := pipeline.NewPlan(src.Manifest, src.RawName, src.RawSize, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := cpu.New(p)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	_, err = pipeline.Convert(context.Background(), zap.NewNop(), src, p, eng, localfs.New(dest),
		pipeline.ConvertOptions{FirstLayer: first, LayerDone: onResume})
	return err
}

func TestAPyramidResumedAtAReportedPointIsIdenticalToAnUninterruptedOne(t *testing.T) {
	for _, zstack := range []bool{false, true} {
		t0, levels := "time", 0
		if zstack {
			// A z-stack level's shard layer spans 2^l level-0 layers, so a
			// deep pyramid resumes only where all of them align; three
			// levels keep several such points in 37 planes.
			t0, levels = "space", 3
		}
		manifest := map[string]any{"version": 1, "dtype": "int16", "multiscale": map[string]any{"method": "mean", "levels": levels},
			"dimensions": []map[string]any{
				{"name": "z", "type": t0, "size": 37, "chunk": 2, "shard": 2},
				{"name": "y", "type": "space", "size": 21, "chunk": 4, "shard": 2},
				{"name": "x", "type": "space", "size": 19, "chunk": 4, "shard": 2},
			}}
		raw := make([]byte, 37*21*19*2)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		dir := t.TempDir()
		mp := acqtest.Write(t, dir, manifest, raw)
		whole, cut := t.TempDir(), t.TempDir()
		var points []int64
		if err := convert(t, mp, whole, 0, func(r int64) error { points = append(points, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(points) < 2 {
			t.Fatalf("z-stack %v: resume points %v, want several", zstack, points)
		}
		// Crash right after each reported point, then resume from it.
		for _, at := range points[:len(points)-1] {
			err := convert(t, mp, cut, 0, func(r int64) error {
				if r == at {
					return errCrash
				}
				return nil
			})
			if !errors.Is(err, errCrash) {
				t.Fatalf("crash at %d: %v", at, err)
			}
			if err := convert(t, mp, cut, at, nil); err != nil {
				t.Fatalf("resume at %d: %v", at, err)
			}
			sameTree(t, whole, cut)
		}
	}
}

func sameTree(t *testing.T, a, b string) {
	t.Helper()
	n, err := dirdiff.Same(a, b)
	if err != nil || n == 0 {
		t.Fatalf("compared %d files: the tree differs after the resume: %v", n, err)
	}
}
