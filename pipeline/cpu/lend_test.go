package cpu_test

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/zspool/zspool/internal/acqtest"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/pipeline/cpu"
	"github.com/zspool/zspool/zstdlit/corpus"
)

// A level stores at most one row an epoch (and one at the flush), so a
// lending engine never starts a row that waits for a lent one it still
// holds itself: every shape of time series and z-stack, whole and ragged,
// converts with one row lent a level.
func TestALendingEngineNeverWaitsForARowItHoldsWhateverTheShape(t *testing.T) {
	const h, w = 16, 16
	for _, dim0 := range []string{"time", "space"} {
		for _, chunk := range []int{1, 2, 3, 4, 8} {
			for _, frames := range []int{1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33} {
				if chunk > frames {
					continue // the manifest's chunk must fit the array
				}
				name := fmt.Sprintf("%s/%d frames/chunk %d", dim0, frames, chunk)
				t.Run(name, func(t *testing.T) {
					dir := t.TempDir()
					m := map[string]any{"version": 1, "dtype": "uint16", "name": "acq",
						"multiscale": map[string]any{"method": "mean"},
						"dimensions": []map[string]any{
							{"name": "t", "type": dim0, "size": frames, "chunk": chunk, "shard": 2},
							{"name": "y", "size": h, "chunk": 4, "shard": 2},
							{"name": "x", "size": w, "chunk": 4, "shard": 2},
						}}
					manifest := acqtest.Write(t, dir, m, corpus.Gaussian12(frames*h*w, 1500, 40, uint64(frames)))
					src, err := pipeline.OpenSource(manifest)
					if err != nil {
						t.Fatal(err)
					}
					defer src.Close()
					p, err := pipeline.NewPlan(src.Manifest, src.RawName, src.RawSize, pipeline.Options{Workers: 2})
					if err != nil {
						t.Fatal(err)
					}
					p.EngineRows = 2
					p.Store = pipeline.StorePlan{LayersInFlight: 2, QueueBytes: 1 << 20, LentRows: 1}
					eng, err := cpu.New(p)
					if err != nil {
						t.Fatal(err)
					}
					defer eng.Close()
					if _, err := pipeline.Convert(context.Background(), zap.NewNop(), src, p, eng, &pipeline.Discard{}, pipeline.ConvertOptions{}); err != nil {
						t.Fatalf("%d levels: %v", len(p.Levels), err)
					}
				})
			}
		}
	}
}
