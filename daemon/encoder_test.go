package daemon

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"

	"github.com/zspool/zspool/destination"
	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/pipeline/cpu"
	"github.com/zspool/zspool/zarr"
	"github.com/zspool/zspool/zstdlit"
)

// The old name, lit, is the segmented encoder: every plan names it so.
func TestEveryJobIsPlannedWithTheConfiguredZstdEncoder(t *testing.T) {
	var planned atomic.Value
	h := newHarness(t, destination.Config{}, func(o *Options) {
		o.ZstdEncoder = pipeline.EncoderLit
		o.NewEngine = func(p *pipeline.Plan) (pipeline.Engine, error) {
			planned.Store(p.Options.ZstdEncoder)
			return cpu.New(p)
		}
	})
	h.start()
	raw := h.drop("lit", 2, 40, 50, nil)
	h.waitFor("the acquisition archived", func() bool { return h.archived("lit") })
	h.stop()
	if got, _ := planned.Load().(string); got != pipeline.EncoderSegmented {
		t.Fatalf("the plan's ZstdEncoder is %q, want %q", got, pipeline.EncoderSegmented)
	}

	stored, chunk := firstChunk(t, h, "lit", raw)
	if want := zstdlit.Encode(nil, chunk, zstdlit.Options{ElemSize: 2}); !bytes.Equal(stored, want) {
		t.Fatalf("chunk (0, 0, 0): stored %d bytes, zstdlit writes %d different ones", len(stored), len(want))
	}
	a, err := zarr.OpenArray(context.Background(), localfs.New(h.opt.Dest.URL), "lit.ome.zarr/0")
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.ReadAll(context.Background())
	if err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("level 0 differs from the raw file (%v)", err)
	}
}

// A misspelt encoder would make every plan fail, and every acquisition
// would be quarantined as bad input; the daemon must refuse to start.
func TestAnUnknownZstdEncoderStopsTheDaemonBeforeItStarts(t *testing.T) {
	h := newHarness(t, destination.Config{}, func(o *Options) { o.ZstdEncoder = "zstdlit" })
	_, err := New(context.Background(), zap.NewNop(), h.opt)
	if err == nil || !strings.Contains(err.Error(), `zstd_encoder: "zstdlit" is not one of "klauspost", "window", "segmented" (or "lit", its old name`) {
		t.Fatalf("New = %v, want a refusal naming zstd_encoder, the value and the choices", err)
	}
}

// firstChunk is chunk (0, 0, 0) of the dataset name, as stored and as its
// bytes: rows 0…31, columns 0…31 of frame 0 of raw (h.drop's 40×50
// frames), whole in the frame.
func firstChunk(t *testing.T, h *harness, name string, raw []byte) (stored, chunk []byte) {
	t.Helper()
	ctx := context.Background()
	store := localfs.New(h.opt.Dest.URL)
	a, err := zarr.OpenArray(ctx, store, name+".ome.zarr/0")
	if err != nil {
		t.Fatal(err)
	}
	for r := range 32 {
		chunk = append(chunk, raw[r*50*2:(r*50+32)*2]...)
	}
	c := []int64{0, 0, 0}
	entries, _, err := a.ReadIndex(ctx, a.Grid.ShardOf(c, nil))
	if err != nil {
		t.Fatal(err)
	}
	e := entries[a.Grid.Slot(c)]
	stored, err = store.GetRange(ctx, a.ShardKey(a.Grid.ShardOf(c, nil)), int64(e.Offset), int64(e.NBytes))
	if err != nil {
		t.Fatal(err)
	}
	return stored, chunk
}

func TestEveryJobIsPlannedWithTheConfiguredZstdChecksum(t *testing.T) {
	var planned atomic.Bool
	h := newHarness(t, destination.Config{}, func(o *Options) {
		o.ZstdEncoder = pipeline.EncoderLit
		o.ZstdChecksum = true
		o.NewEngine = func(p *pipeline.Plan) (pipeline.Engine, error) {
			planned.Store(p.Options.ZstdChecksum)
			return cpu.New(p)
		}
	})
	h.start()
	raw := h.drop("sum", 2, 40, 50, nil)
	h.waitFor("the acquisition archived", func() bool { return h.archived("sum") })
	h.stop()
	if !planned.Load() {
		t.Fatal("the plan's ZstdChecksum is off, want on")
	}
	stored, chunk := firstChunk(t, h, "sum", raw)
	if want := zstdlit.Encode(nil, chunk, zstdlit.Options{Checksum: true, ElemSize: 2}); !bytes.Equal(stored, want) {
		t.Fatalf("chunk (0, 0, 0): stored %d bytes, zstdlit with the checksum writes %d different ones", len(stored), len(want))
	}
}
