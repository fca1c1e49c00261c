package zarr_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/zspool/zspool/zarr"
)

// decodeGeneric decodes a JSON document into maps, slices and json.Number,
// so the test sees exactly what a foreign reader sees.
func decodeGeneric(t *testing.T, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("document is not a JSON object: %v\n%s", err, b)
	}
	if dec.More() {
		t.Fatalf("trailing data after the document:\n%s", b)
	}
	return m
}

// at walks a path of object keys and array indexes.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not an object at %v", path, path[:i])
			}
			if v, ok = m[k]; !ok {
				t.Fatalf("%v: no key %q (have %v)", path, k, slices.Sorted(maps.Keys(m)))
			}
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("%v: no element %d at %v", path, k, path[:i])
			}
			v = a[k]
		}
	}
	return v
}

func keys(t *testing.T, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is not an object", v)
	}
	return slices.Sorted(maps.Keys(m))
}

func ints(t *testing.T, v any) []int64 {
	t.Helper()
	a, ok := v.([]any)
	if !ok {
		t.Fatalf("%v is not an array", v)
	}
	out := make([]int64, len(a))
	for i, x := range a {
		n, ok := x.(json.Number)
		if !ok {
			t.Fatalf("%v: element %d is not a number", v, i)
		}
		var err error
		if out[i], err = n.Int64(); err != nil {
			t.Fatalf("%v: element %d is not an integer", v, i)
		}
	}
	return out
}

func equalJSON(t *testing.T, got any, want string) {
	t.Helper()
	var w any
	dec := json.NewDecoder(strings.NewReader(want))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Fatalf("got %s, want %s", g, want)
	}
}

func TestArrayDocumentHasExactlyTheDesignLayout(t *testing.T) {
	grid := zarr.Grid{Shape: []int64{5, 7, 9}, Chunk: []int64{2, 3, 4}, Shard: []int64{2, 2, 1}}
	for _, tc := range []struct {
		name       string
		spec       zarr.ArraySpec
		innerWant  string
		fillWant   string // exact JSON number text
		floatWants bool
	}{
		{
			name:      "uint16 little endian zstd",
			spec:      zarr.ArraySpec{Grid: grid, DataType: "uint16", Endian: "little", Codec: "zstd", Level: 3, DimNames: []string{"t", "y", "x"}},
			innerWant: `[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":3,"checksum":false}}]`,
			fillWant:  "0",
		},
		{
			name:      "int32 big endian zstd level 19",
			spec:      zarr.ArraySpec{Grid: grid, DataType: "int32", Endian: "big", Codec: "zstd", Level: 19, DimNames: []string{"z", "y", "x"}},
			innerWant: `[{"name":"bytes","configuration":{"endian":"big"}},{"name":"zstd","configuration":{"level":19,"checksum":false}}]`,
			fillWant:  "0",
		},
		{
			name:      "uint8 without compression",
			spec:      zarr.ArraySpec{Grid: grid, DataType: "uint8", Endian: "little", Codec: "none", DimNames: []string{"t", "y", "x"}},
			innerWant: `[{"name":"bytes","configuration":{"endian":"little"}}]`,
			fillWant:  "0",
		},
		{
			name:       "float32",
			spec:       zarr.ArraySpec{Grid: grid, DataType: "float32", Endian: "little", Codec: "zstd", Level: 1, DimNames: []string{"t", "y", "x"}},
			innerWant:  `[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":1,"checksum":false}}]`,
			floatWants: true,
		},
		{
			name:       "float64",
			spec:       zarr.ArraySpec{Grid: grid, DataType: "float64", Endian: "little", Codec: "none", DimNames: []string{"t", "y", "x"}},
			innerWant:  `[{"name":"bytes","configuration":{"endian":"little"}}]`,
			floatWants: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.spec.Document()
			if !bytes.HasSuffix(doc, []byte("}\n")) {
				t.Error("document does not end in a newline")
			}
			m := decodeGeneric(t, doc)
			if got, want := keys(t, m), []string{"chunk_grid", "chunk_key_encoding", "codecs", "data_type", "dimension_names", "fill_value", "node_type", "shape", "zarr_format"}; !slices.Equal(got, want) {
				t.Errorf("top-level keys %v, want %v", got, want)
			}
			equalJSON(t, m["zarr_format"], `3`)
			equalJSON(t, m["node_type"], `"array"`)
			equalJSON(t, m["data_type"], `"`+tc.spec.DataType+`"`)
			if got := ints(t, m["shape"]); !slices.Equal(got, grid.Shape) {
				t.Errorf("shape %v, want %v", got, grid.Shape)
			}
			equalJSON(t, m["chunk_grid"], `{"name":"regular","configuration":{"chunk_shape":[4,6,4]}}`)
			equalJSON(t, m["chunk_key_encoding"], `{"name":"default","configuration":{"separator":"/"}}`)
			fill, ok := m["fill_value"].(json.Number)
			if !ok {
				t.Fatalf("fill_value %#v is not a JSON number", m["fill_value"])
			}
			if tc.floatWants {
				if f, err := fill.Float64(); err != nil || f != 0 {
					t.Errorf("fill_value %q, want the number 0", fill)
				}
			} else if string(fill) != tc.fillWant {
				t.Errorf("fill_value %q, want the integer %s", fill, tc.fillWant)
			}
			equalJSON(t, m["dimension_names"], `["`+strings.Join(tc.spec.DimNames, `","`)+`"]`)

			codecs, _ := m["codecs"].([]any)
			if len(codecs) != 1 {
				t.Fatalf("codecs %v, want exactly one", m["codecs"])
			}
			equalJSON(t, at(t, codecs, 0, "name"), `"sharding_indexed"`)
			if got := keys(t, at(t, codecs, 0)); !slices.Equal(got, []string{"configuration", "name"}) {
				t.Errorf("sharding codec keys %v", got)
			}
			cfg := at(t, codecs, 0, "configuration")
			if got, want := keys(t, cfg), []string{"chunk_shape", "codecs", "index_codecs", "index_location"}; !slices.Equal(got, want) {
				t.Errorf("sharding configuration keys %v, want %v", got, want)
			}
			if got := ints(t, at(t, cfg, "chunk_shape")); !slices.Equal(got, grid.Chunk) {
				t.Errorf("sharding chunk_shape %v, want the inner chunk %v", got, grid.Chunk)
			}
			equalJSON(t, at(t, cfg, "codecs"), tc.innerWant)
			equalJSON(t, at(t, cfg, "index_codecs"), `[{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"}]`)
			equalJSON(t, at(t, cfg, "index_location"), `"end"`)
		})
	}
}

func TestArrayMetadataMatchesItsDocument(t *testing.T) {
	spec := zarr.ArraySpec{
		Grid:     zarr.Grid{Shape: []int64{3, 10, 8}, Chunk: []int64{1, 4, 8}, Shard: []int64{1, 2, 1}},
		DataType: "uint16", Endian: "little", Codec: "zstd", Level: 5, DimNames: []string{"t", "y", "x"},
	}
	var back zarr.ArrayMetadata
	if err := json.Unmarshal(spec.Document(), &back); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(spec.Metadata())
	got, _ := json.Marshal(back)
	if !bytes.Equal(got, want) {
		t.Fatalf("document decodes to\n%s\nwant\n%s", got, want)
	}
	if !bytes.Equal(spec.Document(), spec.Document()) {
		t.Fatal("Document is not deterministic")
	}
}

func testOME() zarr.OME {
	return zarr.OME{Version: "0.5", Multiscales: []zarr.Multiscale{{
		Axes: []zarr.Axis{{Name: "t", Type: "time", Unit: "second"}, {Name: "y", Type: "space", Unit: "micrometer"}, {Name: "x", Type: "space"}},
		Datasets: []zarr.MultiscaleDataset{
			{Path: "0", CoordinateTransformations: []zarr.Transform{{Type: "scale", Scale: []float64{1, 0.5, 0.5}}}},
			{Path: "1", CoordinateTransformations: []zarr.Transform{{Type: "scale", Scale: []float64{1, 1, 1}}}},
		},
		Type:     "mean",
		Name:     "acq",
		Metadata: &zarr.MultiscaleMetadata{Description: "test levels", Method: "test", Version: "test"},
	}}}
}

type provenance struct {
	Version string `json:"version"`
	Bytes   int64  `json:"bytes"`
}

func TestGroupDocumentPutsOMEFreeAttributesAndProvenanceInTheirPlaces(t *testing.T) {
	free := json.RawMessage(`{"operator": "ada", "stage": {"x": 1.5, "y": -2}, "tags": ["a", "b"]}`)
	doc, err := zarr.GroupDocument(ptr(testOME()), free, provenance{Version: "1.2.3", Bytes: 42})
	if err != nil {
		t.Fatal(err)
	}
	m := decodeGeneric(t, doc)
	if got := keys(t, m); !slices.Equal(got, []string{"attributes", "node_type", "zarr_format"}) {
		t.Errorf("top-level keys %v", got)
	}
	equalJSON(t, m["zarr_format"], `3`)
	equalJSON(t, m["node_type"], `"group"`)
	attrs := m["attributes"]
	if got := keys(t, attrs); !slices.Equal(got, []string{"ome", "operator", "stage", "tags", "zspool"}) {
		t.Errorf("attribute keys %v", got)
	}
	equalJSON(t, at(t, attrs, "operator"), `"ada"`)
	equalJSON(t, at(t, attrs, "stage"), `{"x": 1.5, "y": -2}`)
	equalJSON(t, at(t, attrs, "tags"), `["a", "b"]`)
	equalJSON(t, at(t, attrs, "zspool"), `{"version": "1.2.3", "bytes": 42}`)
	ome := at(t, attrs, "ome")
	if got := keys(t, ome); !slices.Equal(got, []string{"multiscales", "version"}) {
		t.Errorf("ome keys %v: free attributes must never go under ome", got)
	}
	equalJSON(t, ome, `{"version": "0.5", "multiscales": [{
		"axes": [{"name": "t", "type": "time", "unit": "second"}, {"name": "y", "type": "space", "unit": "micrometer"}, {"name": "x", "type": "space"}],
		"datasets": [
			{"path": "0", "coordinateTransformations": [{"type": "scale", "scale": [1, 0.5, 0.5]}]},
			{"path": "1", "coordinateTransformations": [{"type": "scale", "scale": [1, 1, 1]}]}
		],
		"type": "mean",
		"name": "acq",
		"metadata": {"description": "test levels", "method": "test", "version": "test"}
	}]}`)
}

func TestGroupDocumentWithoutFreeAttributesOrProvenanceHoldsOnlyOME(t *testing.T) {
	for _, free := range []json.RawMessage{nil, json.RawMessage(`null`), json.RawMessage(`{}`)} {
		doc, err := zarr.GroupDocument(ptr(testOME()), free, nil)
		if err != nil {
			t.Fatalf("free %q: %v", free, err)
		}
		if got := keys(t, at(t, decodeGeneric(t, doc), "attributes")); !slices.Equal(got, []string{"ome"}) {
			t.Errorf("free %q: attribute keys %v, want only ome", free, got)
		}
	}
}

func TestGroupDocumentIsDeterministic(t *testing.T) {
	free := json.RawMessage(`{"z": 1, "a": {"nested": [3, 2, 1]}, "m": "x", "b": true, "q": null}`)
	first, err := zarr.GroupDocument(ptr(testOME()), free, provenance{Version: "v", Bytes: 7})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, err := zarr.GroupDocument(ptr(testOME()), slices.Clone(free), provenance{Version: "v", Bytes: 7})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, first) {
			t.Fatalf("same input, different bytes:\n%s\n---\n%s", first, again)
		}
	}
	if !bytes.HasSuffix(first, []byte("}\n")) {
		t.Error("document does not end in a newline")
	}
}

func TestGroupDocumentRefusesFreeAttributesThatAreNotAnObjectOrCollide(t *testing.T) {
	for _, tc := range []struct {
		name string
		free string
		prov any
	}{
		{"an array", `[1, 2]`, nil},
		{"a string", `"x"`, nil},
		{"broken JSON", `{"a": `, nil},
		{"a free ome key", `{"ome": {"version": "0.4"}}`, nil},
		{"a free zspool key beside the provenance", `{"zspool": 1}`, provenance{}},
		{"a free zspool key without provenance", `{"zspool": 1}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if doc, err := zarr.GroupDocument(ptr(testOME()), json.RawMessage(tc.free), tc.prov); err == nil {
				t.Fatalf("accepted, wrote\n%s", doc)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
