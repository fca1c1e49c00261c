package cpu_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"go.uber.org/zap"

	"github.com/zspool/zspool/internal/acqtest"
	"github.com/zspool/zspool/internal/dirdiff"
	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/pipeline/cpu"
	"github.com/zspool/zspool/zarr"
	"github.com/zspool/zspool/zstdlit"
	"github.com/zspool/zspool/zstdlit/corpus"
)

// encoderAcq writes a 5×300×170 uint16 acquisition in 2×256×160 chunks
// (160 KiB: two zstd blocks, the second short; ragged in y and x) whose
// epochs differ: 12-bit gaussian frames (Huffman literals), frames of one
// value (Huffman over two symbols beside the zero padding), and a last
// frame of fill (absent chunks), compressed at the manifest's default.
func encoderAcq(t *testing.T, dir string) (manifest string, raw []byte) {
	return encoderAcqAt(t, dir, nil)
}

// encoderAcqAt is encoderAcq with compression.level set, when level is
// not nil.
func encoderAcqAt(t *testing.T, dir string, level *int) (manifest string, raw []byte) {
	t.Helper()
	const frame = 300 * 170
	raw = append(corpus.Gaussian12(2*frame, 1500, 40, 1), make([]byte, 3*frame*2)...)
	for i := 2 * frame; i < 4*frame; i++ {
		binary.LittleEndian.PutUint16(raw[2*i:], 100)
	}
	m := map[string]any{"version": 1, "dtype": "uint16", "name": "acq", "dimensions": []map[string]any{
		{"name": "t", "size": 5, "chunk": 2, "shard": 2},
		{"name": "y", "size": 300, "chunk": 256, "shard": 2},
		{"name": "x", "size": 170, "chunk": 160, "shard": 2},
	}}
	if level != nil {
		m["compression"] = map[string]any{"codec": "zstd", "level": *level}
	}
	return acqtest.Write(t, dir, m, raw), raw
}

func convertWith(t *testing.T, manifest, dest string, opts pipeline.Options) {
	t.Helper()
	src, p := openPlan(t, manifest, opts)
	if _, err := pipeline.Convert(context.Background(), zap.NewNop(), src, p, newEngine(t, p), localfs.New(dest), pipeline.ConvertOptions{}); err != nil {
		t.Fatal(err)
	}
}

// openPlan opens the acquisition of manifest and plans it with opts; the
// source is closed when the test ends.
func openPlan(t *testing.T, manifest string, opts pipeline.Options) (*pipeline.Source, *pipeline.Plan) {
	t.Helper()
	src, err := pipeline.OpenSource(manifest)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	p, err := pipeline.NewPlan(src.Manifest, src.RawName, src.RawSize, opts)
	if err != nil {
		t.Fatal(err)
	}
	return src, p
}

// newEngine builds the CPU engine for p, closed when the test ends.
func newEngine(t *testing.T, p *pipeline.Plan) *cpu.Engine {
	t.Helper()
	eng, err := cpu.New(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

func TestZstdlitsEncodersStoreExactlyTheirFrameOfEveryPaddedChunk(t *testing.T) {
	for _, tc := range []struct {
		name    string
		encoder string
		level   int
		frame   func(padded []byte) []byte
	}{
		{"segmented, by its old name lit", pipeline.EncoderLit, 1,
			func(b []byte) []byte { return zstdlit.Encode(nil, b, zstdlit.Options{ElemSize: 2}) }},
		{"window at level 1", pipeline.EncoderWindow, 1,
			func(b []byte) []byte { return zstdlit.EncodeWindow(nil, b, zstdlit.WindowOptionsFor(1, 2)) }},
		{"window at level 5", pipeline.EncoderWindow, 5,
			func(b []byte) []byte { return zstdlit.EncodeWindow(nil, b, zstdlit.WindowOptionsFor(5, 2)) }},
		{"the CPU engine's default at level 2: window", pipeline.EncoderDefault, 2,
			func(b []byte) []byte { return zstdlit.EncodeWindow(nil, b, zstdlit.WindowOptionsFor(2, 2)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storesExactFrames(t, tc.encoder, tc.level, tc.frame)
		})
	}
}

func storesExactFrames(t *testing.T, encoder string, level int, frame func(padded []byte) []byte) {
	spool, dest := t.TempDir(), t.TempDir()
	manifest, raw := encoderAcqAt(t, spool, &level)
	convertWith(t, manifest, dest, pipeline.Options{ZstdEncoder: encoder})

	ctx := context.Background()
	store := localfs.New(dest)
	a, err := zarr.OpenArray(ctx, store, "acq.ome.zarr/0")
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	g := a.Grid
	frameBytes := a.FrameBytes()
	present, absent, huffman := 0, 0, 0
	extent := []int64{g.Chunks(0), g.Chunks(1), g.Chunks(2)}
	err = zarr.ForEach(extent, func(c []int64) error {
		// The padded chunk as the writer saw it: zeros, then the
		// in-bounds elements of its epoch.
		f0 := c[0] * g.Chunk[0]
		frames := min(g.Chunk[0], g.Shape[0]-f0)
		epoch := raw[f0*frameBytes : (f0+frames)*frameBytes]
		padded := make([]byte, a.ChunkBytes())
		g.EpochBox(c, frames, a.Elem).Scatter(epoch, padded)

		entries, _, err := a.ReadIndex(ctx, g.ShardOf(c, nil))
		if err != nil {
			t.Fatal(err)
		}
		e := entries[g.Slot(c)]
		if !e.Present() {
			if !bytes.Equal(padded, make([]byte, len(padded))) {
				t.Fatalf("chunk %v is absent but not all fill", c)
			}
			absent++
			return nil
		}
		present++
		stored, err := store.GetRange(ctx, a.ShardKey(g.ShardOf(c, nil)), int64(e.Offset), int64(e.NBytes))
		if err != nil {
			t.Fatal(err)
		}
		if want := frame(padded); !bytes.Equal(stored, want) {
			t.Fatalf("chunk %v: stored %d bytes differ from the encoder's %d", c, len(stored), len(want))
		}
		// Block_Type 2 (Compressed) first: Huffman literals were used.
		hs := zstdlit.FrameHeaderSize(len(padded))
		if stored[hs]>>1&3 == 2 {
			huffman++
		}
		got, err := dec.DecodeAll(stored, nil)
		if err != nil || !bytes.Equal(got, padded) {
			t.Fatalf("chunk %v does not decode to its padded bytes: %v", c, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if huffman == 0 || absent == 0 {
		t.Fatalf("%d chunks present (%d with Huffman literals), %d absent: the case should have both kinds", present, huffman, absent)
	}
	t.Logf("%d chunks present (%d with Huffman literals), %d absent", present, huffman, absent)
	all, err := a.ReadAll(ctx)
	if err != nil || !bytes.Equal(all, raw) {
		t.Fatalf("the array does not read back as the raw file: %v", err)
	}
}

// The CPU engine's default is the windowed encoder at every level (0,
// zstd's "default level", is its level 3): naming it writes the same
// bytes, and klauspost, named, writes others.
func TestTheDefaultEncoderIsWindowAtEveryLevel(t *testing.T) {
	shards := filepath.Join("acq.ome.zarr", "0", "c")
	for _, level := range []int{1, 2, 3, 0, 7} {
		t.Run(fmt.Sprintf("level %d", level), func(t *testing.T) {
			spool := t.TempDir()
			manifest, _ := encoderAcqAt(t, spool, &level)
			def, win, kl := t.TempDir(), t.TempDir(), t.TempDir()
			convertWith(t, manifest, def, pipeline.Options{})
			convertWith(t, manifest, win, pipeline.Options{ZstdEncoder: pipeline.EncoderWindow})
			convertWith(t, manifest, kl, pipeline.Options{ZstdEncoder: pipeline.EncoderKlauspost})
			n, err := dirdiff.Same(filepath.Join(def, shards), filepath.Join(win, shards))
			if err != nil || n == 0 {
				t.Fatalf("walked %d shards: the default and window differ: %v", n, err)
			}
			if _, err := dirdiff.Same(filepath.Join(def, shards), filepath.Join(kl, shards)); err == nil {
				t.Fatal("the default writes klauspost's bytes")
			}
		})
	}
}

func TestAnUnknownZstdEncoderIsRefusedNamingItAndTheChoices(t *testing.T) {
	dir := t.TempDir()
	manifest, _ := encoderAcq(t, dir)
	src, err := pipeline.OpenSource(manifest)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	_, err = pipeline.NewPlan(src.Manifest, src.RawName, src.RawSize, pipeline.Options{ZstdEncoder: "gpu"})
	if err == nil {
		t.Fatal("an unknown encoder was accepted")
	}
	for _, want := range []string{`"gpu"`, `"klauspost"`, `"window"`, `"segmented"`, `"lit"`, "zstd_encoder"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// With two level-0 rows in flight, Encode returns the row before its own
// and Convert keeps each epoch until the next Encode; with rows lent to
// the store, the writers write the compressors' outputs as they are and
// a level's next row waits for one to come back. The stored objects must
// be those of one row at a time, copied, pyramid and ragged last epoch
// included, for a time series and for a z-stack, whose levels take two
// frames of the level above for one.
func TestRowsInFlightAndLentStoreTheSameObjectsAsOneRowAtATime(t *testing.T) {
	for _, dim0 := range []string{"time", "space"} {
		t.Run(dim0, func(t *testing.T) { rowsInFlightAndLent(t, dim0) })
	}
}

func rowsInFlightAndLent(t *testing.T, dim0 string) {
	dir := t.TempDir()
	const frames, h, w = 9, 96, 80
	raw := corpus.Gaussian12(frames*h*w, 1500, 40, 7)
	m := map[string]any{"version": 1, "dtype": "uint16", "name": "acq",
		"multiscale": map[string]any{"method": "mean", "levels": 3},
		"dimensions": []map[string]any{
			{"name": "t", "type": dim0, "size": frames, "chunk": 2, "shard": 2},
			{"name": "y", "size": h, "chunk": 32, "shard": 2},
			{"name": "x", "size": w, "chunk": 32, "shard": 2},
		}}
	manifest := acqtest.Write(t, dir, m, raw)
	var want string
	for _, tc := range []struct{ rows, lent int }{{1, 0}, {2, 0}, {1, 1}, {2, 1}, {2, 3}} {
		rows := tc.rows
		src, err := pipeline.OpenSource(manifest)
		if err != nil {
			t.Fatal(err)
		}
		p, err := pipeline.NewPlan(src.Manifest, src.RawName, src.RawSize, pipeline.Options{Workers: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Levels) < 2 {
			t.Fatalf("%d levels: the case has no pyramid", len(p.Levels))
		}
		p.EngineRows = rows
		// The plan's copies on a large host, or its lent rows: the test
		// machine may have too few cores for either.
		p.Store = pipeline.StorePlan{LayersInFlight: 2, QueueBytes: 64 << 20, LentRows: tc.lent}
		eng, err := cpu.New(p)
		if err != nil {
			t.Fatal(err)
		}
		if eng.HoldsEpochs() != (rows == 2) {
			t.Fatalf("%d rows in flight: HoldsEpochs %v", rows, eng.HoldsEpochs())
		}
		out := filepath.Join(dir, fmt.Sprintf("out%d.%d", rows, tc.lent))
		_, err = pipeline.Convert(context.Background(), zap.NewNop(), src, p, eng, localfs.New(out), pipeline.ConvertOptions{})
		eng.Close()
		src.Close()
		if err != nil {
			t.Fatalf("%d rows in flight, %d lent: %v", rows, tc.lent, err)
		}
		if want == "" {
			want = out
		} else if n, err := dirdiff.Same(want, out); err != nil || n == 0 {
			t.Fatalf("%d rows in flight, %d lent, stored other objects than one at a time (%d files alike): %v", rows, tc.lent, n, err)
		}
	}
}
