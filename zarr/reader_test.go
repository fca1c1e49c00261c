package zarr_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/zspool/zspool/internal/acqtest"
	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/zarr"
)

// The datasets here are written by hand, independently of the pipeline:
// chunks are cut element by element, compressed with klauspost's encoder
// and packed with AppendIndex, so the reader is checked against the format
// rather than against the writer.

const root = "acq.ome.zarr"

type level struct {
	path string
	spec zarr.ArraySpec
	data []byte // dense C-order contents, true shape
}

// hooks let a test damage the dataset as it is written.
type hooks struct {
	// chunk alters a padded chunk before it is encoded.
	chunk func(li int, c []int64, padded []byte) []byte
	// stored alters a chunk's stored (encoded) bytes.
	stored func(li int, c []int64, stored []byte) []byte
	// shard alters a shard's entries and chunk bytes before the index is
	// appended.
	shard func(li int, g []int64, entries []zarr.Entry, body []byte) ([]zarr.Entry, []byte)
	// ome alters the group's OME block.
	ome func(*zarr.OME)
}

type fixture struct {
	dir     string
	st      *localfs.Dir
	levels  []level
	present []int64 // present chunks per level
	absent  [][]int64
}

var encoder = func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err)
	}
	return e
}()

// paddedChunk cuts chunk c out of the dense array element by element,
// padding with zeros.
func paddedChunk(g zarr.Grid, c []int64, elem int, data []byte) []byte {
	out := make([]byte, g.ChunkElems()*int64(elem))
	x := make([]int64, g.Rank())
	for i := range g.ChunkElems() {
		rc := unravel(i, g.Chunk)
		in := true
		for d := range x {
			x[d] = c[d]*g.Chunk[d] + rc[d]
			in = in && x[d] < g.Shape[d]
		}
		if in {
			o := ravel(x, g.Shape) * int64(elem)
			copy(out[i*int64(elem):], data[o:o+int64(elem)])
		}
	}
	return out
}

// zeroChunk clears every element of chunk c in data, so the writer omits it.
func zeroChunk(g zarr.Grid, c []int64, elem int, data []byte) {
	for i := range prod(g.Shape) {
		x := unravel(i, g.Shape)
		mine := true
		for d := range x {
			mine = mine && x[d]/g.Chunk[d] == c[d]
		}
		if mine {
			clear(data[i*int64(elem) : (i+1)*int64(elem)])
		}
	}
}

func randomData(g zarr.Grid, elem int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, prod(g.Shape)*int64(elem))
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

// defaultLevels is a two-level uint16 zstd dataset with ragged chunk and
// shard grids and one all-zero (absent) chunk per level.
func defaultLevels() []level {
	names := []string{"t", "y", "x"}
	g0 := zarr.Grid{Shape: []int64{5, 7, 9}, Chunk: []int64{2, 3, 4}, Shard: []int64{2, 2, 2}}
	g1 := zarr.Grid{Shape: []int64{3, 4, 5}, Chunk: []int64{2, 3, 4}, Shard: []int64{2, 2, 2}}
	l0 := level{"0", zarr.ArraySpec{Grid: g0, DataType: "uint16", Endian: "little", Codec: "zstd", Level: 3, DimNames: names}, randomData(g0, 2, 11)}
	l1 := level{"1", zarr.ArraySpec{Grid: g1, DataType: "uint16", Endian: "little", Codec: "zstd", Level: 3, DimNames: names}, randomData(g1, 2, 12)}
	zeroChunk(g0, []int64{1, 0, 1}, 2, l0.data)
	zeroChunk(g1, []int64{0, 1, 1}, 2, l1.data)
	return []level{l0, l1}
}

// rawLevels is a one-level uint8 dataset without compression.
func rawLevels() []level {
	g := zarr.Grid{Shape: []int64{3, 10, 8}, Chunk: []int64{1, 4, 8}, Shard: []int64{1, 2, 1}}
	l := level{"0", zarr.ArraySpec{Grid: g, DataType: "uint8", Endian: "little", Codec: "none", DimNames: []string{"z", "y", "x"}}, randomData(g, 1, 21)}
	zeroChunk(g, []int64{2, 2, 0}, 1, l.data)
	return []level{l}
}

func omeFor(levels []level) zarr.OME {
	ms := zarr.Multiscale{Name: "acq", Type: "mean", Metadata: &zarr.MultiscaleMetadata{Description: "test levels", Method: "test", Version: "test"}}
	for _, n := range levels[0].spec.DimNames {
		ms.Axes = append(ms.Axes, zarr.Axis{Name: n, Type: "space"})
	}
	for i, l := range levels {
		scale := make([]float64, l.spec.Grid.Rank())
		for d := range scale {
			scale[d] = float64(int(1) << i)
		}
		ms.Datasets = append(ms.Datasets, zarr.MultiscaleDataset{Path: l.path, CoordinateTransformations: []zarr.Transform{{Type: "scale", Scale: scale}}})
	}
	return zarr.OME{Version: "0.5", Multiscales: []zarr.Multiscale{ms}}
}

// build writes levels under dir/acq.ome.zarr through localfs: every array
// document, every shard (chunks in reverse slot order, all-zero chunks
// omitted), then the group document last.
func build(t *testing.T, levels []level, h hooks) *fixture {
	t.Helper()
	ctx := t.Context()
	fx := &fixture{dir: t.TempDir(), levels: levels}
	fx.st = localfs.New(filepath.Join(fx.dir, "out"))
	for li, l := range levels {
		g := l.spec.Grid
		elem := zarr.DType(l.spec.DataType).Size()
		if err := fx.st.Put(ctx, root+"/"+l.path+"/zarr.json", l.spec.Document()); err != nil {
			t.Fatal(err)
		}
		var present int64
		var absentChunks []int64
		err := zarr.ForEach(shardCounts(g), func(gc []int64) error {
			entries := make([]zarr.Entry, g.SlotsPerShard())
			var body []byte
			for s := g.SlotsPerShard() - 1; s >= 0; s-- {
				c, in := g.SlotChunk(gc, s, nil)
				entries[s] = zarr.Entry{Offset: zarr.Absent, NBytes: zarr.Absent}
				if !in {
					continue
				}
				padded := paddedChunk(g, c, elem, l.data)
				if !slices.ContainsFunc(padded, func(b byte) bool { return b != 0 }) {
					absentChunks = append(absentChunks, c...)
					continue
				}
				if h.chunk != nil {
					padded = h.chunk(li, c, padded)
				}
				stored := padded
				if l.spec.Codec == "zstd" {
					stored = encoder.EncodeAll(padded, nil)
				}
				if h.stored != nil {
					stored = h.stored(li, c, stored)
				}
				entries[s] = zarr.Entry{Offset: uint64(len(body)), NBytes: uint64(len(stored))}
				body = append(body, stored...)
				present++
			}
			if h.shard != nil {
				entries, body = h.shard(li, gc, entries, body)
			}
			obj := zarr.AppendIndex(body, entries)
			w, err := fx.st.Create(ctx, root+"/"+l.path+"/"+zarr.ShardKey(gc))
			if err != nil {
				return err
			}
			// Two writes, to go through the streaming path as the
			// pipeline does.
			half := len(obj) / 2
			if _, err := w.Write(obj[:half]); err != nil {
				return err
			}
			if _, err := w.Write(obj[half:]); err != nil {
				return err
			}
			return w.Commit()
		})
		if err != nil {
			t.Fatal(err)
		}
		fx.present = append(fx.present, present)
		fx.absent = append(fx.absent, absentChunks)
	}
	ome := omeFor(levels)
	if h.ome != nil {
		h.ome(&ome)
	}
	doc, err := zarr.GroupDocument(&ome, json.RawMessage(`{"operator":"test"}`), map[string]string{"version": "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := fx.st.Put(ctx, root+"/zarr.json", doc); err != nil {
		t.Fatal(err)
	}
	return fx
}

// file is the on-disk path of a key.
func (fx *fixture) file(key string) string {
	return filepath.Join(fx.st.Root(), filepath.FromSlash(key))
}

// raw writes level 0's data (plus extra) as the raw file and opens it.
func (fx *fixture) raw(t *testing.T, mutate func([]byte) []byte) *os.File {
	t.Helper()
	b := slices.Clone(fx.levels[0].data)
	if mutate != nil {
		b = mutate(b)
	}
	return acqtest.OpenRaw(t, filepath.Join(fx.dir, "raw.bin"), b)
}

func (fx *fixture) open(t *testing.T) *zarr.Dataset {
	t.Helper()
	ds, err := zarr.Open(t.Context(), fx.st, root)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return ds
}

func TestOpenReadsTheGroupAndEveryLevel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		levels []level
		elem   int
		codec  string
	}{
		{"two uint16 zstd levels", defaultLevels(), 2, "zstd"},
		{"one uint8 level without compression", rawLevels(), 1, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := build(t, tc.levels, hooks{})
			ds := fx.open(t)
			if ds.Root != root || len(ds.Levels) != len(tc.levels) {
				t.Fatalf("root %q with %d levels, want %q with %d", ds.Root, len(ds.Levels), root, len(tc.levels))
			}
			if got := string(ds.Group.Attributes["operator"]); got != `"test"` {
				t.Errorf("free attribute operator = %s", got)
			}
			if ds.OME.Version != "0.5" || ds.OME.Multiscales[0].Name != "acq" {
				t.Errorf("OME %+v", ds.OME)
			}
			for i, a := range ds.Levels {
				l := tc.levels[i]
				if a.Path != root+"/"+l.path {
					t.Errorf("level %d path %q", i, a.Path)
				}
				if !slices.Equal(a.Grid.Shape, l.spec.Grid.Shape) || !slices.Equal(a.Grid.Chunk, l.spec.Grid.Chunk) || !slices.Equal(a.Grid.Shard, l.spec.Grid.Shard) {
					t.Errorf("level %d grid %+v, want %+v", i, a.Grid, l.spec.Grid)
				}
				if a.DataType != l.spec.DataType || a.Elem != tc.elem || a.Codec != tc.codec || a.Endian != "little" {
					t.Errorf("level %d: %s elem %d codec %s endian %s", i, a.DataType, a.Elem, a.Codec, a.Endian)
				}
				if got, want := a.FrameBytes(), prod(l.spec.Grid.Shape[1:])*int64(tc.elem); got != want {
					t.Errorf("level %d FrameBytes %d, want %d", i, got, want)
				}
				if got, want := a.Epochs(), l.spec.Grid.Chunks(0); got != want {
					t.Errorf("level %d Epochs %d, want %d", i, got, want)
				}
			}
		})
	}
}

func TestReadChunkReturnsPresentChunksPaddedAndAbsentOnesAsZeros(t *testing.T) {
	for _, tc := range []struct {
		name   string
		levels []level
	}{
		{"zstd", defaultLevels()},
		{"none", rawLevels()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := build(t, tc.levels, hooks{})
			ds := fx.open(t)
			for li, a := range ds.Levels {
				g := a.Grid
				absent := fx.absent[li]
				if len(absent) == 0 {
					t.Fatalf("level %d: fixture has no absent chunk", li)
				}
				err := zarr.ForEach(chunkCounts(g), func(c []int64) error {
					got, err := a.ReadChunk(t.Context(), c)
					if err != nil {
						return err
					}
					if want := paddedChunk(g, c, a.Elem, tc.levels[li].data); !bytes.Equal(got, want) {
						return fmt.Errorf("chunk %v differs from the padded reference", c)
					}
					return nil
				})
				if err != nil {
					t.Fatalf("level %d: %v", li, err)
				}
				// The absent chunk really is absent from its index.
				c := absent[:g.Rank()]
				entries, _, err := a.ReadIndex(t.Context(), g.ShardOf(c, nil))
				if err != nil {
					t.Fatal(err)
				}
				if e := entries[g.Slot(c)]; e.Present() {
					t.Fatalf("level %d chunk %v: entry %+v, want absent", li, c, e)
				}
				got, err := a.ReadChunk(t.Context(), c)
				if err != nil || int64(len(got)) != a.ChunkBytes() || slices.ContainsFunc(got, func(b byte) bool { return b != 0 }) {
					t.Fatalf("level %d absent chunk %v: %d bytes, err %v; want %d zero bytes", li, c, len(got), err, a.ChunkBytes())
				}
			}
		})
	}
}

func TestReadChunkRefusesCoordinatesOutsideTheChunkGrid(t *testing.T) {
	fx := build(t, defaultLevels(), hooks{})
	a := fx.open(t).Levels[0] // chunk grid (3,3,3)
	for _, c := range [][]int64{{3, 0, 0}, {0, 0, 3}, {-1, 0, 0}, {0, -2, 1}, {0, 0}, {0, 0, 0, 0}} {
		if _, err := a.ReadChunk(t.Context(), c); err == nil {
			t.Errorf("ReadChunk(%v) succeeded", c)
		}
	}
}

func TestReadAllGivesBackTheDenseArray(t *testing.T) {
	for _, tc := range []struct {
		name   string
		levels []level
	}{
		{"zstd", defaultLevels()},
		{"none", rawLevels()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := build(t, tc.levels, hooks{})
			for li, a := range fx.open(t).Levels {
				got, err := a.ReadAll(t.Context())
				if err != nil {
					t.Fatalf("level %d: %v", li, err)
				}
				if !bytes.Equal(got, tc.levels[li].data) {
					t.Fatalf("level %d: ReadAll differs from the data at byte %d", li, firstDiffAt(got, tc.levels[li].data))
				}
			}
		})
	}
}

func TestEpochReaderReadsEachChunkRowIntoAReusedBuffer(t *testing.T) {
	fx := build(t, defaultLevels(), hooks{})
	a := fx.open(t).Levels[0] // 5 frames in epochs of 2: the last holds 1
	r := a.NewEpochReader()
	frame := a.FrameBytes()
	buf := bytes.Repeat([]byte{0xEE}, int(3*frame)) // larger than any epoch, full of garbage
	// Out of order and repeated, across shard layers and back.
	for _, e := range []int64{0, 1, 2, 0, 2, 1} {
		got, err := r.ReadEpoch(t.Context(), e, buf)
		if err != nil {
			t.Fatalf("epoch %d: %v", e, err)
		}
		lo := e * a.Grid.Chunk[0] * frame
		hi := min(lo+a.Grid.Chunk[0]*frame, int64(len(fx.levels[0].data)))
		if !bytes.Equal(got, fx.levels[0].data[lo:hi]) {
			t.Fatalf("epoch %d: %d bytes differ from data[%d:%d]", e, len(got), lo, hi)
		}
		if &got[0] != &buf[0] {
			t.Errorf("epoch %d: a large enough buffer was not reused", e)
		}
	}
	// A nil buffer is allocated.
	got, err := r.ReadEpoch(t.Context(), 2, nil)
	if err != nil || int64(len(got)) != frame {
		t.Fatalf("last epoch into nil: %d bytes, err %v; want one frame", len(got), err)
	}
	for _, e := range []int64{-1, 3} {
		if _, err := r.ReadEpoch(t.Context(), e, nil); err == nil {
			t.Errorf("epoch %d of 3 read without error", e)
		}
	}
}

func TestVerifyAcceptsAFaithfulDatasetAndItsRawFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		levels []level
	}{
		{"two uint16 zstd levels", defaultLevels()},
		{"one uint8 level without compression", rawLevels()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := build(t, tc.levels, hooks{})
			ds := fx.open(t)
			var progress []int64
			rep, err := zarr.Verify(t.Context(), ds, fx.raw(t, nil), func(n int64) { progress = append(progress, n) })
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			var shards, chunks int64
			for li, l := range tc.levels {
				shards += l.spec.Grid.ShardCount()
				chunks += fx.present[li]
			}
			n0 := int64(len(tc.levels[0].data))
			want := zarr.Report{Levels: len(tc.levels), Shards: shards, Chunks: chunks, RawCompared: n0}
			if *rep != want {
				t.Errorf("report %+v, want %+v", *rep, want)
			}
			if len(progress) != int(ds.Levels[0].Epochs()) || !slices.IsSorted(progress) || progress[len(progress)-1] != n0 {
				t.Errorf("progress %v, want one rising call per epoch ending at %d", progress, n0)
			}
			// Without a raw file only the dataset is checked.
			rep, err = zarr.Verify(t.Context(), ds, nil, nil)
			if err != nil || rep.RawCompared != 0 || rep.Chunks != chunks {
				t.Errorf("without raw: %+v, %v", rep, err)
			}
		})
	}
}

// eofReaderAt returns io.EOF alongside a full read that ends at the end of
// the data, which io.ReaderAt allows.
type eofReaderAt struct{ b []byte }

func (r eofReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(r.b)) {
		return 0, io.EOF
	}
	n := copy(p, r.b[off:])
	if off+int64(n) == int64(len(r.b)) {
		return n, io.EOF
	}
	return n, nil
}

func TestVerifyAcceptsAReaderAtThatReportsEOFWithTheLastFullRead(t *testing.T) {
	fx := build(t, defaultLevels(), hooks{})
	rep, err := zarr.Verify(t.Context(), fx.open(t), eofReaderAt{fx.levels[0].data}, nil)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if rep.RawCompared != int64(len(fx.levels[0].data)) {
		t.Fatalf("compared %d bytes, want %d", rep.RawCompared, len(fx.levels[0].data))
	}
}

func TestVerifyNamesTheByteOffsetOfTheFirstRawMismatch(t *testing.T) {
	fx := build(t, defaultLevels(), hooks{})
	ds := fx.open(t)
	n := len(fx.levels[0].data)
	frame := int(ds.Levels[0].FrameBytes())
	for _, off := range []int{0, 1, frame - 1, 2 * frame, 2*frame + 17, n - 1} {
		t.Run(fmt.Sprint(off), func(t *testing.T) {
			raw := fx.raw(t, func(b []byte) []byte {
				b[off] ^= 0x40
				b[n-1] ^= 0x01 // a later difference must not be the one named
				if off == n-1 {
					b[n-1] ^= 0x01
				}
				return b
			})
			_, err := zarr.Verify(t.Context(), ds, raw, nil)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at byte %d ", off)) {
				t.Fatalf("err %v; want one naming byte %d", err, off)
			}
		})
	}
}

func TestVerifyFailsWithAClearErrorOnBrokenDatasets(t *testing.T) {
	const shard = root + "/0/c/1/0/0"
	for _, tc := range []struct {
		name   string
		levels func() []level
		hooks  hooks
		damage func(t *testing.T, fx *fixture)
		raw    func([]byte) []byte
		want   []string // substrings of the error
		is     error
	}{
		{
			name:   "a missing shard",
			damage: func(t *testing.T, fx *fixture) { mustRemove(t, fx.file(shard)) },
			want:   []string{shard},
			is:     zarr.ErrNotFound,
		},
		{
			name:   "a shard truncated below its index",
			damage: func(t *testing.T, fx *fixture) { truncate(t, fx.file(shard), 100) },
			want:   []string{shard, "shorter than its 132-byte index"},
		},
		{
			name: "a shard that lost its last byte",
			damage: func(t *testing.T, fx *fixture) {
				fi, _ := os.Stat(fx.file(shard))
				truncate(t, fx.file(shard), fi.Size()-1)
			},
			want: []string{shard},
			is:   zarr.ErrIndexChecksum,
		},
		{
			name: "a shard that lost its first bytes (index intact)",
			damage: func(t *testing.T, fx *fixture) {
				b, err := os.ReadFile(fx.file(shard))
				if err != nil {
					t.Fatal(err)
				}
				mustWrite(t, fx.file(shard), b[5:])
			},
			want: []string{shard, "outside the"},
		},
		{
			name: "a bad index crc",
			damage: func(t *testing.T, fx *fixture) {
				b, err := os.ReadFile(fx.file(shard))
				if err != nil {
					t.Fatal(err)
				}
				b[len(b)-1] ^= 0x80
				mustWrite(t, fx.file(shard), b)
			},
			want: []string{shard},
			is:   zarr.ErrIndexChecksum,
		},
		{
			name: "a flipped bit inside the index",
			damage: func(t *testing.T, fx *fixture) {
				b, err := os.ReadFile(fx.file(shard))
				if err != nil {
					t.Fatal(err)
				}
				b[len(b)-int(zarr.IndexSize(8))+3] ^= 0x01
				mustWrite(t, fx.file(shard), b)
			},
			want: []string{shard},
			is:   zarr.ErrIndexChecksum,
		},
		{
			name: "a chunk that decodes to the wrong size",
			hooks: hooks{chunk: func(li int, c []int64, padded []byte) []byte {
				if li == 0 && slices.Equal(c, []int64{2, 1, 0}) {
					return padded[:len(padded)-2]
				}
				return padded
			}},
			want: []string{"chunk [2 1 0]", shard, "decodes to 46 bytes, want 48"},
		},
		{
			name:   "a raw chunk of the wrong size",
			levels: rawLevels,
			hooks: hooks{chunk: func(li int, c []int64, padded []byte) []byte {
				if slices.Equal(c, []int64{1, 0, 0}) {
					return append(padded, 0)
				}
				return padded
			}},
			want: []string{"chunk [1 0 0]", "raw chunk of 33 bytes, want 32"},
		},
		{
			name: "a chunk that is not zstd",
			hooks: hooks{stored: func(li int, c []int64, stored []byte) []byte {
				if li == 1 && slices.Equal(c, []int64{0, 0, 0}) {
					return []byte("definitely not a zstd frame")
				}
				return stored
			}},
			want: []string{"level 1", "chunk [0 0 0]", "zstd"},
		},
		{
			name: "a present slot outside the array",
			hooks: hooks{shard: func(li int, g []int64, entries []zarr.Entry, body []byte) ([]zarr.Entry, []byte) {
				// Shard (1,1,1) of (5,7,9)/(2,3,4)/(2,2,2) holds only chunk
				// (2,2,2) in slot 0; slot 7 would be chunk (3,3,3).
				if li == 0 && slices.Equal(g, []int64{1, 1, 1}) {
					entries[7] = entries[0]
				}
				return entries, body
			}},
			want: []string{root + "/0/c/1/1/1", "slot 7", "outside the array"},
		},
		{
			name:  "a time axis after a space axis breaks the axis order",
			hooks: hooks{ome: func(o *zarr.OME) { o.Multiscales[0].Axes[1].Type = "time" }},
			want:  []string{"multiscales[0].axes", "wants an optional time axis first", "y is out of place"},
		},
		{
			name:  "a unit the spec does not list is refused",
			hooks: hooks{ome: func(o *zarr.OME) { o.Multiscales[0].Axes[2].Unit = "um" }},
			want:  []string{"axis x", `unit "um" is not one of OME-NGFF 0.5's space units`},
		},
		{
			name: "an axis type the spec does not know makes too few space axes",
			hooks: hooks{ome: func(o *zarr.OME) {
				o.Multiscales[0].Axes[1].Type = "spatial"
				o.Multiscales[0].Axes[2].Type = "spatial"
			}},
			want: []string{"strict_image.schema", "/ome/multiscales/0/axes"},
		},
		{
			name: "a dataset without a scale breaks the schema",
			hooks: hooks{ome: func(o *zarr.OME) {
				o.Multiscales[0].Datasets[0].CoordinateTransformations = []zarr.Transform{{Type: "translation", Translation: []float64{0, 0, 0}}}
			}},
			want: []string{"strict_image.schema", "/ome/multiscales/0/datasets/0/coordinateTransformations"},
		},
		{
			name:  "multiscales without metadata break the strict schema",
			hooks: hooks{ome: func(o *zarr.OME) { o.Multiscales[0].Metadata = nil }},
			want:  []string{"strict_image.schema", "missing property 'metadata'"},
		},
		{
			name:  "dimension_names that differ from the axes",
			hooks: hooks{ome: func(o *zarr.OME) { o.Multiscales[0].Axes[1].Name = "z" }},
			want:  []string{"dimension_names [t y x] differ from the axes [t z x]"},
		},
		{
			name: "an axis more than the array's rank",
			hooks: hooks{ome: func(o *zarr.OME) {
				o.Multiscales[0].Axes = append([]zarr.Axis{{Name: "c", Type: "other"}}, o.Multiscales[0].Axes...)
			}},
			want: []string{`datasets[0] (path "0")`, "a scale of 3 values for 4 axes"},
		},
		{
			name: "a scale of the wrong length",
			hooks: hooks{ome: func(o *zarr.OME) {
				o.Multiscales[0].Datasets[1].CoordinateTransformations[0].Scale = []float64{2, 2}
			}},
			want: []string{`datasets[1] (path "1")`, "a scale of 2 values for 3 axes"},
		},
		{
			name: "a level that grows",
			levels: func() []level {
				l := defaultLevels()
				l[1].spec.Grid.Shape = []int64{3, 8, 5}
				l[1].data = randomData(l[1].spec.Grid, 2, 13)
				return l
			},
			want: []string{`level "1"`, "dim 1 grows from 7 to 8"},
		},
		{
			name: "a level that does not shrink",
			levels: func() []level {
				l := defaultLevels()
				l[1].spec.Grid = l[0].spec.Grid
				l[1].data = l[0].data
				return l
			},
			want: []string{`level "1"`, "not smaller"},
		},
		{
			name: "a raw file longer than the array",
			raw:  func(b []byte) []byte { return append(b, 0) },
			want: []string{"raw file is longer than level 0 (630 bytes)"},
		},
		{
			name: "a raw file shorter than the array",
			raw:  func(b []byte) []byte { return b[:len(b)-1] },
			want: []string{"the raw file is shorter than level 0: it ends at byte 629, level 0 holds 630 bytes"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			levels := defaultLevels
			if tc.levels != nil {
				levels = tc.levels
			}
			fx := build(t, levels(), tc.hooks)
			if tc.damage != nil {
				tc.damage(t, fx)
			}
			ds, err := zarr.Open(t.Context(), fx.st, root)
			if err == nil {
				_, err = zarr.Verify(t.Context(), ds, fx.raw(t, tc.raw), nil)
			}
			if err == nil {
				t.Fatal("verified without error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not mention %q", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err %v is not %v", err, tc.is)
			}
		})
	}
}

func TestOpenRefusesWhatZspoolDoesNotWrite(t *testing.T) {
	arrayKey := root + "/0/zarr.json"
	editArray := func(edit func(m map[string]any)) func(t *testing.T, fx *fixture) {
		return func(t *testing.T, fx *fixture) {
			var m map[string]any
			b, err := os.ReadFile(fx.file(arrayKey))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			edit(m)
			b, _ = json.Marshal(m)
			mustWrite(t, fx.file(arrayKey), b)
		}
	}
	sharding := func(m map[string]any) map[string]any {
		return m["codecs"].([]any)[0].(map[string]any)["configuration"].(map[string]any)
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, fx *fixture)
		want   string
		is     error
	}{
		{"no group document", func(t *testing.T, fx *fixture) { mustRemove(t, fx.file(root+"/zarr.json")) }, "group zarr.json", zarr.ErrNotFound},
		{"a group that is not JSON", func(t *testing.T, fx *fixture) { mustWrite(t, fx.file(root+"/zarr.json"), []byte("{")) }, "group zarr.json", nil},
		{"a v2 group", func(t *testing.T, fx *fixture) {
			mustWrite(t, fx.file(root+"/zarr.json"), []byte(`{"zarr_format":2,"node_type":"group","attributes":{}}`))
		}, "not a Zarr v3 group", nil},
		{"a group with neither ome nor an array 0", func(t *testing.T, fx *fixture) {
			mustWrite(t, fx.file(root+"/zarr.json"), []byte(`{"zarr_format":3,"node_type":"group","attributes":{"a":1}}`))
			if err := os.Remove(fx.file(root + "/0/zarr.json")); err != nil {
				t.Fatal(err)
			}
		}, "neither attributes.ome nor an array 0", nil},
		{"ome 0.4", func(t *testing.T, fx *fixture) {
			mustWrite(t, fx.file(root+"/zarr.json"), []byte(`{"zarr_format":3,"node_type":"group","attributes":{"ome":{"version":"0.4","multiscales":[{}]}}}`))
		}, "want version 0.5", nil},
		{"no datasets", func(t *testing.T, fx *fixture) {
			mustWrite(t, fx.file(root+"/zarr.json"), []byte(`{"zarr_format":3,"node_type":"group","attributes":{"ome":{"version":"0.5","multiscales":[{"axes":[],"datasets":[]}]}}}`))
		}, "lists no datasets", nil},
		{"a missing level document", func(t *testing.T, fx *fixture) { mustRemove(t, fx.file(root+"/1/zarr.json")) }, "level 1", zarr.ErrNotFound},
		{"a group node as a level", editArray(func(m map[string]any) { m["node_type"] = "group" }), "not a Zarr v3 array", nil},
		{"an unsupported data type", editArray(func(m map[string]any) { m["data_type"] = "complex64" }), `data_type "complex64"`, nil},
		{"a dot key separator", editArray(func(m map[string]any) {
			m["chunk_key_encoding"] = map[string]any{"name": "default", "configuration": map[string]any{"separator": "."}}
		}), "separator", nil},
		{"a second codec beside sharding", editArray(func(m map[string]any) {
			m["codecs"] = append(m["codecs"].([]any), map[string]any{"name": "crc32c"})
		}), "sharding_indexed", nil},
		{"a shard shape that is not a multiple of the chunk", editArray(func(m map[string]any) {
			m["chunk_grid"] = map[string]any{"name": "regular", "configuration": map[string]any{"chunk_shape": []int{4, 7, 8}}}
		}), "not a multiple", nil},
		{"ranks that differ", editArray(func(m map[string]any) { m["shape"] = []int{5, 7} }), "ranks differ", nil},
		{"dimension names of the wrong count", editArray(func(m map[string]any) { m["dimension_names"] = []string{"y", "x"} }), "dimension_names", nil},
		{"the index at the start", editArray(func(m map[string]any) { sharding(m)["index_location"] = "start" }), "index_codecs", nil},
		{"an unknown inner codec", editArray(func(m map[string]any) {
			sharding(m)["codecs"] = []any{map[string]any{"name": "bytes"}, map[string]any{"name": "gzip"}}
		}), "inner codecs", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := build(t, defaultLevels(), hooks{})
			tc.damage(t, fx)
			_, err := zarr.Open(t.Context(), fx.st, root)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want one mentioning %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("err %v is not %v", err, tc.is)
			}
		})
	}
}

func TestOpenAcceptsABytesCodecWithoutConfiguration(t *testing.T) {
	// uint8 needs no endian: a bare bytes codec reads as little endian.
	fx := build(t, rawLevels(), hooks{})
	key := root + "/0/zarr.json"
	b, err := os.ReadFile(fx.file(key))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	cfg := m["codecs"].([]any)[0].(map[string]any)["configuration"].(map[string]any)
	cfg["codecs"] = []any{map[string]any{"name": "bytes"}}
	b, _ = json.Marshal(m)
	mustWrite(t, fx.file(key), b)
	ds := fx.open(t)
	if a := ds.Levels[0]; a.Endian != "little" || a.Codec != "none" {
		t.Fatalf("endian %q codec %q", a.Endian, a.Codec)
	}
	if _, err := zarr.Verify(t.Context(), ds, fx.raw(t, nil), nil); err != nil {
		t.Fatal(err)
	}
}

// A Store that only serves what it holds in memory, to show the reader
// needs nothing beyond the Store interface.
type memStore map[string][]byte

func (m memStore) Get(_ context.Context, key string) ([]byte, error) {
	b, ok := m[key]
	if !ok {
		return nil, fmt.Errorf("%s: %w", key, zarr.ErrNotFound)
	}
	return b, nil
}

func (m memStore) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	b, err := m.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if off < 0 || n < 0 || off+n > int64(len(b)) {
		return nil, fmt.Errorf("%s: range [%d, +%d) outside %d bytes", key, off, n, len(b))
	}
	return b[off : off+n], nil
}

func (m memStore) Size(ctx context.Context, key string) (int64, error) {
	b, err := m.Get(ctx, key)
	return int64(len(b)), err
}

func TestTheReaderWorksThroughAnyStore(t *testing.T) {
	fx := build(t, defaultLevels(), hooks{})
	mem := memStore{}
	err := filepath.WalkDir(fx.st.Root(), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(fx.st.Root(), p)
		b, err := os.ReadFile(p)
		mem[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := zarr.Open(t.Context(), mem, root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zarr.Verify(t.Context(), ds, bytes.NewReader(fx.levels[0].data), nil); err != nil {
		t.Fatal(err)
	}
}

func mustRemove(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, p string, n int64) {
	t.Helper()
	if err := os.Truncate(p, n); err != nil {
		t.Fatal(err)
	}
}
