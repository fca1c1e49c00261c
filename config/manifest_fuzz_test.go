package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzParseManifest checks that ParseManifest never panics, that every
// error is one line naming what is wrong, and that every manifest it
// accepts satisfies the rules and survives a round trip: encoding it and
// parsing the result gives the same manifest.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(exampleManifest), exampleStem)
	f.Add([]byte(minimalManifest), exampleStem)
	f.Add([]byte(doc(`{"name":"t","size":0,"chunk":3},{"name":"x","size":1000,"shard":2}`, `"attributes":{"a":{"b":[1,{"c":null}]}}`)), "s")
	f.Add([]byte(`{"version":1,"dtype":"uint8","dimensions":[{"name":"t","size":4611686018427387904}]}`), "s")
	f.Add([]byte(`{"version":1,"dtype":"float64","dimensions":[{"name":"a","size":9223372036854775807},{"name":"b","size":3,"scale":1e-300}]}`), "s")
	for _, tt := range badCases[:20] {
		f.Add([]byte(tt.doc), exampleStem)
	}
	f.Add([]byte(""), "")
	f.Add([]byte(`{"version":1}{}`), "..")
	f.Fuzz(func(t *testing.T, data []byte, stem string) {
		m, err := ParseManifest(data, stem)
		if err != nil {
			if m != nil {
				t.Fatalf("returned a manifest beside the error %v", err)
			}
			for _, e := range leafErrors(err) {
				if msg := e.Error(); strings.ContainsAny(msg, "\n\r") {
					t.Fatalf("error spans lines: %q", msg)
				}
				var fe *FieldError
				if errors.As(e, &fe) && (fe.Field == "" || fe.Msg == "") {
					t.Fatalf("field error without field or message: %#v", fe)
				}
			}
			return
		}
		checkInvariants(t, m)

		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(m); err != nil {
			t.Fatalf("encoding the accepted manifest: %v", err)
		}
		again, err := ParseManifest(buf.Bytes(), stem)
		if err != nil {
			t.Fatalf("the encoded manifest is refused: %v\n%s", err, buf.Bytes())
		}
		if !reflect.DeepEqual(m, again) {
			t.Fatalf("round trip changed the manifest:\n%+v\n%+v", m, again)
		}
	})
}

// checkInvariants asserts what every accepted manifest guarantees.
func checkInvariants(t *testing.T, m *Manifest) {
	t.Helper()
	if m.Version != ManifestVersion || m.DType.Size() == 0 || !slices.Contains(byteOrders, m.ByteOrder) {
		t.Fatalf("bad version, dtype or byte order: %+v", m)
	}
	if !datasetNameRE.MatchString(m.Name) || m.Name == "." || m.Name == ".." {
		t.Fatalf("invalid name %q", m.Name)
	}
	if dataFileProblem(m.Data) != "" || strings.ContainsAny(m.Data, "/\\\x00") {
		t.Fatalf("invalid data %q", m.Data)
	}
	if n := len(m.Dimensions); n < 1 || n > maxDimensions {
		t.Fatalf("%d dimensions", n)
	}
	names := map[string]bool{}
	for i, d := range m.Dimensions {
		if !dimensionNameRE.MatchString(d.Name) || names[d.Name] {
			t.Fatalf("dimension %d: bad or repeated name %q", i, d.Name)
		}
		names[d.Name] = true
		if !slices.Contains(dimensionTypes, d.Type) {
			t.Fatalf("dimension %d: type %q", i, d.Type)
		}
		if d.Size < 0 || d.Size == 0 && i > 0 {
			t.Fatalf("dimension %d: size %d", i, d.Size)
		}
		if d.Chunk < 1 || d.Size > 0 && d.Chunk > d.Size {
			t.Fatalf("dimension %d: chunk %d for size %d", i, d.Chunk, d.Size)
		}
		if d.Shard < 1 {
			t.Fatalf("dimension %d: shard %d", i, d.Shard)
		}
		if !(d.Scale > 0) || math.IsInf(d.Scale, 0) {
			t.Fatalf("dimension %d: scale %v", i, d.Scale)
		}
		if _, bad := hasControl(d.Unit); bad {
			t.Fatalf("dimension %d: unit %q", i, d.Unit)
		}
	}
	if cb := m.ChunkBytes(); cb < 1 || cb > maxChunkBytes {
		t.Fatalf("chunk bytes %d", cb)
	}
	frame := m.FrameElems()
	frameBytes, ok := mulNonNeg(frame, int64(m.DType.Size()))
	if frame < 1 || !ok {
		t.Fatalf("frame of %d elements", frame)
	}
	if _, ok := mulNonNeg(m.Dimensions[0].Size, frameBytes); !ok {
		t.Fatalf("array of %d frames of %d bytes", m.Dimensions[0].Size, frameBytes)
	}
	if ms := m.Multiscale; ms != nil && (!slices.Contains(methods, ms.Method) || ms.Levels < 0 || ms.Levels > maxLevels) {
		t.Fatalf("multiscale %+v", ms)
	}
	if c := m.Compression; !slices.Contains(codecs, c.Codec) || c.Level < minZstdLevel || c.Level > maxZstdLevel {
		t.Fatalf("compression %+v", c)
	}
	if m.Attributes != nil {
		var attrs map[string]json.RawMessage
		if err := json.Unmarshal(m.Attributes, &attrs); err != nil || attrs == nil {
			t.Fatalf("attributes %s are not an object: %v", m.Attributes, err)
		}
		if _, ok := attrs[reservedAttrKey]; ok {
			t.Fatalf("attributes %s hold %q", m.Attributes, reservedAttrKey)
		}
	}
}
