package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// exampleManifest is the example of MANIFEST.md, verbatim.
const exampleManifest = `{
  "version": 1,
  "data": "acq_0001.raw",
  "dtype": "uint16",
  "byte_order": "little",
  "name": "acq_0001",
  "dimensions": [
    {"name": "t", "type": "time",    "size": 0,    "chunk": 1,   "shard": 64},
    {"name": "c", "type": "channel", "size": 3,    "chunk": 1,   "shard": 1},
    {"name": "y", "type": "space",   "size": 2048, "chunk": 128, "shard": 8, "unit": "micrometer", "scale": 0.65},
    {"name": "x", "type": "space",   "size": 2048, "chunk": 128, "shard": 8, "unit": "micrometer", "scale": 0.65}
  ],
  "multiscale": {"method": "mean", "levels": 0},
  "compression": {"codec": "zstd", "level": 1},
  "channels": [{"label": "DAPI", "color": "0000FF"}, {"label": "GFP", "color": "00FF00"}, {"label": "RFP", "color": "FF0000", "window": [100, 3000]}],
  "attributes": {"instrument": "scope-3", "operator": "ab"}
}`

// minimalManifest keeps only what the example must say: everything else
// takes its default.
const minimalManifest = `{
  "version": 1,
  "dtype": "uint16",
  "dimensions": [
    {"name": "t", "size": 0},
    {"name": "c", "size": 3},
    {"name": "y", "type": "space", "size": 2048},
    {"name": "x", "type": "space", "size": 2048}
  ]
}`

const exampleStem = "acq_0001"

func mustParse(t *testing.T, doc, stem string) *Manifest {
	t.Helper()
	m, err := ParseManifest([]byte(doc), stem)
	if err != nil {
		t.Fatalf("ParseManifest: %v", err)
	}
	return m
}

func TestTheManifestExampleParses(t *testing.T) {
	m := mustParse(t, exampleManifest, exampleStem)
	want := &Manifest{
		Version:   1,
		Data:      "acq_0001.raw",
		DType:     "uint16",
		ByteOrder: "little",
		Name:      "acq_0001",
		Dimensions: []Dimension{
			{Name: "t", Type: "time", Size: 0, Chunk: 1, Shard: 64, Scale: 1},
			{Name: "c", Type: "channel", Size: 3, Chunk: 1, Shard: 1, Scale: 1},
			{Name: "y", Type: "space", Size: 2048, Chunk: 128, Shard: 8, Unit: "micrometer", Scale: 0.65},
			{Name: "x", Type: "space", Size: 2048, Chunk: 128, Shard: 8, Unit: "micrometer", Scale: 0.65},
		},
		Multiscale:  &Multiscale{Method: "mean", Levels: 0},
		Compression: Compression{Codec: "zstd", Level: 1},
		Attributes:  json.RawMessage(`{"instrument":"scope-3","operator":"ab"}`),
		OME:         "auto",
		Channels: []Channel{{Label: "DAPI", Color: "0000FF"}, {Label: "GFP", Color: "00FF00"},
			{Label: "RFP", Color: "FF0000", Window: &[2]float64{100, 3000}}},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got  %+v\nwant %+v", m, want)
	}
	if got := m.ChunkBytes(); got != 128*128*2 {
		t.Errorf("ChunkBytes = %d, want %d", got, 128*128*2)
	}
	if got := m.FrameElems(); got != 3*2048*2048 {
		t.Errorf("FrameElems = %d, want %d", got, 3*2048*2048)
	}
}

func TestTheMinimalExampleTakesTheDocumentedDefaults(t *testing.T) {
	m := mustParse(t, minimalManifest, exampleStem)
	// chunk: 1 for dim 0, the whole size for c, 256 for y and x (≥ 512).
	// shard: chunk = 3·256·256·2 B = 384 KiB, budget 128 MiB / 384 KiB = 341
	// chunks; x takes its 8, leaving 42; y its 8, leaving 5; c its 1; t the 5.
	want := &Manifest{
		Version:   1,
		Data:      "acq_0001.raw",
		DType:     "uint16",
		ByteOrder: "little",
		Name:      "acq_0001",
		Dimensions: []Dimension{
			{Name: "t", Type: "time", Size: 0, Chunk: 1, Shard: 5, Scale: 1},
			{Name: "c", Type: "channel", Size: 3, Chunk: 3, Shard: 1, Scale: 1},
			{Name: "y", Type: "space", Size: 2048, Chunk: 256, Shard: 8, Scale: 1},
			{Name: "x", Type: "space", Size: 2048, Chunk: 256, Shard: 8, Scale: 1},
		},
		Compression: Compression{Codec: "zstd", Level: 1},
		OME:         "auto",
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got  %+v\nwant %+v", m, want)
	}
	if !m.Dimensions[2].Downsampled() || m.Dimensions[1].Downsampled() {
		t.Errorf("downsample should default to true for space dims only")
	}
}

// doc builds a manifest around a dimensions array and optional extra
// top-level members.
func doc(dims string, extra ...string) string {
	s := `{"version": 1, "dtype": "uint16", "dimensions": [` + dims + `]`
	for _, e := range extra {
		s += ", " + e
	}
	return s + "}"
}

func TestEveryDefault(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		stem  string
		check func(t *testing.T, m *Manifest)
	}{
		{"data defaults to the stem plus .raw", doc(`{"name":"x","size":4}`), "run-7", func(t *testing.T, m *Manifest) {
			expect(t, "data", m.Data, "run-7.raw")
		}},
		{"name defaults to the stem", doc(`{"name":"x","size":4}`), "run-7", func(t *testing.T, m *Manifest) {
			expect(t, "name", m.Name, "run-7")
		}},
		{"a given name wins over an invalid stem", doc(`{"name":"x","size":4}`, `"name":"ok"`), "not ok", func(t *testing.T, m *Manifest) {
			expect(t, "name", m.Name, "ok")
		}},
		{"byte_order defaults to little", doc(`{"name":"x","size":4}`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "byte_order", m.ByteOrder, "little")
		}},
		{"big byte_order is kept", doc(`{"name":"x","size":4}`, `"byte_order":"big"`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "byte_order", m.ByteOrder, "big")
		}},
		{"type defaults to other for an unconventional name", doc(`{"name":"q","size":4}`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "type", m.Dimensions[0].Type, "other")
		}},
		{"type is inferred from the conventional names", doc(`{"name":"t","size":4},{"name":"c","size":2},{"name":"z","size":3},{"name":"y","size":5},{"name":"x","size":6}`), "s", func(t *testing.T, m *Manifest) {
			var got []string
			for _, d := range m.Dimensions {
				got = append(got, d.Type)
			}
			expect(t, "types", strings.Join(got, ","), "time,channel,space,space,space")
		}},
		{"ome defaults to auto", doc(`{"name":"y","size":4},{"name":"x","size":4}`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "ome", m.OME, "auto")
		}},
		{"unit spellings are normalised to the spec's names", doc(`{"name":"t","size":4,"unit":"ms"},{"name":"y","size":4,"unit":"um"},{"name":"x","size":4,"unit":"µm"}`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "units", m.Dimensions[0].Unit+","+m.Dimensions[1].Unit+","+m.Dimensions[2].Unit, "millisecond,micrometer,micrometer")
		}},
		{"British and plural spellings are normalised", doc(`{"name":"y","size":4,"unit":"Micrometres"},{"name":"x","size":4,"unit":"nanometers"}`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "units", m.Dimensions[0].Unit+","+m.Dimensions[1].Unit, "micrometer,nanometer")
		}},
		{"channels get labels, colours and windows", doc(`{"name":"c","size":2},{"name":"y","size":4},{"name":"x","size":4}`, `"channels":[{"label":"DAPI","color":"0000ff"},{"window":[100,3000]}]`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "channel 0", fmt.Sprintf("%s %s %v", m.Channels[0].Label, m.Channels[0].Color, m.Channels[0].Window), "DAPI 0000FF <nil>")
			expect(t, "channel 1", fmt.Sprintf("%s %s %v", m.Channels[1].Label, m.Channels[1].Color, *m.Channels[1].Window), "c 1 FFFFFF [100 3000]")
		}},
		{"dim 0 chunk defaults to 1 even when large", doc(`{"name":"z","size":4096},{"name":"x","size":8}`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "chunk", m.Dimensions[0].Chunk, int64(1))
		}},
		{"a small dim is one chunk", doc(`{"name":"t","size":0},{"name":"x","size":511}`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "chunk", m.Dimensions[1].Chunk, int64(511))
		}},
		{"a dim of 512 or more is chunked by 256", doc(`{"name":"t","size":0},{"name":"c","type":"channel","size":512},{"name":"x","size":100000}`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "chunk c", m.Dimensions[1].Chunk, int64(256))
			expect(t, "chunk x", m.Dimensions[2].Chunk, int64(256))
		}},
		{"scale defaults to 1 and unit to empty", doc(`{"name":"x","size":4}`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "scale", m.Dimensions[0].Scale, 1.0)
			expect(t, "unit", m.Dimensions[0].Unit, "")
		}},
		{"downsample is kept when given", doc(`{"name":"t","size":0},{"name":"x","type":"space","size":8,"downsample":false}`), "s", func(t *testing.T, m *Manifest) {
			if d := m.Dimensions[1]; d.Downsample == nil || *d.Downsample || d.Downsampled() {
				t.Errorf("downsample = %v, want explicit false", d.Downsample)
			}
		}},
		{"shards fill toward 128 MiB from the fastest dim", doc(`{"name":"t","size":0},{"name":"y","size":2048,"chunk":128},{"name":"x","size":2048,"chunk":128}`), "s", func(t *testing.T, m *Manifest) {
			// 128·128·2 B = 32 KiB a chunk: 4096 chunks; x 16, y 16, t 16.
			expectShards(t, m, 16, 16, 16)
		}},
		{"dim 0 shard is clamped to its chunk count when the size is known", doc(`{"name":"t","size":3},{"name":"x","size":2048,"chunk":128}`), "s", func(t *testing.T, m *Manifest) {
			expectShards(t, m, 3, 16)
		}},
		{"dim 0 shard takes the remaining budget when its size is inferred", doc(`{"name":"t","size":0},{"name":"x","size":1024}`), "s", func(t *testing.T, m *Manifest) {
			// 256·2 B a chunk: 262144 chunks; x takes 4, t the other 65536.
			expectShards(t, m, 65536, 4)
		}},
		{"a chunk over 128 MiB gives shards of one chunk", `{"version":1,"dtype":"uint8","dimensions":[{"name":"t","size":0},{"name":"y","size":16384,"chunk":16384},{"name":"x","size":16384,"chunk":16384}]}`, "s", func(t *testing.T, m *Manifest) {
			expectShards(t, m, 1, 1, 1)
		}},
		{"a given shard is kept and uses up budget", doc(`{"name":"t","size":0},{"name":"y","size":2048,"chunk":128},{"name":"x","size":2048,"chunk":128,"shard":4}`), "s", func(t *testing.T, m *Manifest) {
			// 4096 chunks: x given 4 leaves 1024; y takes 16, leaving 64 for t.
			expectShards(t, m, 64, 16, 4)
		}},
		{"multiscale is nil when absent", doc(`{"name":"x","size":4}`), "s", func(t *testing.T, m *Manifest) {
			if m.Multiscale != nil {
				t.Errorf("multiscale = %+v, want nil", m.Multiscale)
			}
		}},
		{"multiscale null means absent", doc(`{"name":"x","size":4}`, `"multiscale":null`), "s", func(t *testing.T, m *Manifest) {
			if m.Multiscale != nil {
				t.Errorf("multiscale = %+v, want nil", m.Multiscale)
			}
		}},
		{"multiscale method defaults to mean and levels to automatic", doc(`{"name":"x","size":4}`, `"multiscale":{}`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "multiscale", *m.Multiscale, Multiscale{Method: "mean", Levels: 0})
		}},
		{"compression defaults to zstd level 1", doc(`{"name":"x","size":4}`, `"compression":{}`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "compression", m.Compression, Compression{Codec: "zstd", Level: 1})
		}},
		{"codec none keeps the default level", doc(`{"name":"x","size":4}`, `"compression":{"codec":"none"}`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "compression", m.Compression, Compression{Codec: "none", Level: 1})
		}},
		{"null attributes are absent", doc(`{"name":"x","size":4}`, `"attributes":null`), "s", func(t *testing.T, m *Manifest) {
			if m.Attributes != nil {
				t.Errorf("attributes = %s, want nil", m.Attributes)
			}
		}},
		{"attributes are kept compact", doc(`{"name":"x","size":4}`, "\"attributes\": { \"a\" : [ 1, 2 ],\n \"b\": {\"ome\": 1} }"), "s", func(t *testing.T, m *Manifest) {
			expect(t, "attributes", string(m.Attributes), `{"a":[1,2],"b":{"ome":1}}`)
		}},
		{"a leading byte order mark is ignored", "\uFEFF" + doc(`{"name":"x","size":4}`), "s", func(t *testing.T, m *Manifest) {
			expect(t, "name", m.Name, "s")
		}},
		{"sizes up to 2^62 are fine", `{"version":1,"dtype":"uint8","dimensions":[{"name":"t","size":4611686018427387904}]}`, "s", func(t *testing.T, m *Manifest) {
			expect(t, "frame", m.FrameElems(), int64(1))
			expect(t, "chunk bytes", m.ChunkBytes(), int64(1))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, mustParse(t, tt.doc, tt.stem))
		})
	}
}

func expect[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func expectShards(t *testing.T, m *Manifest, want ...int64) {
	t.Helper()
	var got []int64
	for _, d := range m.Dimensions {
		got = append(got, d.Shard)
	}
	expect(t, "shards", got, want)
}

// leafErrors flattens a joined error into its parts.
func leafErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leafErrors(e)...)
		}
		return out
	}
	return []error{err}
}

func TestAllViolationsAreReportedAsFieldErrors(t *testing.T) {
	_, err := ParseManifest([]byte(`{"version":2,"dtype":"float16","dimensions":[{"name":"T","size":-1}],"compression":{"level":99}}`), "s")
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "version" {
		t.Fatalf("errors.As found %v, want the version FieldError first", fe)
	}
	var fields []string
	for _, e := range leafErrors(err) {
		if !errors.As(e, &fe) {
			t.Fatalf("%v is not a *FieldError", e)
		}
		fields = append(fields, fe.Field)
	}
	expect(t, "fields", fields, []string{"version", "dtype", "dimensions[0].name", "dimensions[0].size", "compression.level"})
	if !strings.Contains(err.Error(), "dimensions[0].size: -1 is not ≥ 0") {
		t.Errorf("error text %q lacks the size violation", err)
	}
}

func TestSyntaxErrorsWrapTheJSONError(t *testing.T) {
	_, err := ParseManifest([]byte(`{"version": 1,,}`), "s")
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error %v does not wrap a *json.SyntaxError", err)
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		t.Errorf("a document error should not be a FieldError: %v", fe)
	}
}

func TestFrameElemsAndChunkBytesRefuseToWrap(t *testing.T) {
	m := &Manifest{DType: "uint64", Dimensions: []Dimension{
		{Size: 0, Chunk: 1 << 62}, {Size: 1 << 62, Chunk: 1}, {Size: 1, Chunk: 1},
	}}
	expect(t, "ChunkBytes", m.ChunkBytes(), int64(-1))
	expect(t, "FrameElems", m.FrameElems(), int64(1<<62))
	m.Dimensions[2].Size = 2
	expect(t, "FrameElems", m.FrameElems(), int64(-1))
	expect(t, "FrameElems of one dim", (&Manifest{Dimensions: []Dimension{{Size: 7}}}).FrameElems(), int64(1))
}
