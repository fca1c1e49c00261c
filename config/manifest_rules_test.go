package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// edited is the MANIFEST.md example after change, re-encoded.
func edited(change func(m map[string]any)) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(exampleManifest), &m); err != nil {
		panic(err)
	}
	change(m)
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// dim is dimension i of an unmarshalled example.
func dim(m map[string]any, i int) map[string]any {
	return m["dimensions"].([]any)[i].(map[string]any)
}

// dims returns n copies of a small dimension with distinct names.
func dims(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"name": string(rune('a' + i)), "size": 2}
	}
	return out
}

type badCase struct {
	name   string
	doc    string
	stem   string // default exampleStem
	field  string // "" for an error about the whole document
	phrase string
	also   int // further violations that follow from the same mistake
}

var badCases = []badCase{
	// The document.
	{name: "an empty file is refused", doc: "", phrase: "manifest is empty"},
	{name: "a file of whitespace is refused as empty", doc: " \n\t", phrase: "manifest is empty"},
	{name: "a non-JSON file is refused", doc: "version = 1", phrase: "not valid JSON (at byte 0)"},
	{name: "a truncated object is refused", doc: `{"version": 1`, phrase: "not valid JSON"},
	{name: "trailing garbage after the object is refused", doc: exampleManifest + "\n}x", phrase: "data after its JSON value"},
	{name: "a second object is refused", doc: exampleManifest + exampleManifest, phrase: "exactly one object"},
	{name: "a document that is an array is refused", doc: `[1]`, phrase: "must be a JSON object, got array"},
	{name: "invalid UTF-8 is refused", doc: "{\"version\": 1, \"name\": \"\xff\"}", phrase: "not valid UTF-8 (at byte 24)"},

	// Keys.
	{name: "an unknown top-level field is refused", doc: edited(func(m map[string]any) { m["colour"] = "red" }), field: "colour", phrase: "unknown field; known fields: version, data"},
	{name: "a key in the wrong case is refused with a hint", doc: strings.Replace(exampleManifest, `"version"`, `"Version"`, 1), field: "Version", phrase: `did you mean "version"?`, also: 1}, // and version is missing
	{name: "a duplicate top-level key is refused", doc: strings.Replace(exampleManifest, `"dtype": "uint16",`, `"dtype": "uint16", "dtype": "uint8",`, 1), field: "dtype", phrase: "appears more than once"},
	{name: "an unknown dimension field is refused", doc: edited(func(m map[string]any) { dim(m, 1)["colour"] = "red" }), field: "dimensions[1].colour", phrase: "unknown field"},
	{name: "an unknown multiscale field is refused", doc: edited(func(m map[string]any) { m["multiscale"].(map[string]any)["level"] = 2 }), field: "multiscale.level", phrase: "unknown field"},
	{name: "an unknown compression field is refused", doc: edited(func(m map[string]any) { m["compression"].(map[string]any)["shuffle"] = true }), field: "compression.shuffle", phrase: "unknown field"},
	{name: "a strange unknown key is quoted in the path", doc: edited(func(m map[string]any) { m["a b\n"] = 1 }), field: `["a b\n"]`, phrase: "unknown field"},

	// version.
	{name: "version 2 is refused", doc: edited(func(m map[string]any) { m["version"] = 2 }), field: "version", phrase: "2 is not supported, must be 1"},
	{name: "a missing version is refused", doc: edited(func(m map[string]any) { delete(m, "version") }), field: "version", phrase: "required, must be 1"},
	{name: "a null version is refused", doc: edited(func(m map[string]any) { m["version"] = nil }), field: "version", phrase: "want an integer, got null"},
	{name: "version 1.0 is not an integer", doc: strings.Replace(exampleManifest, `"version": 1`, `"version": 1.0`, 1), field: "version", phrase: "want an integer, got 1.0"},

	// data.
	{name: "data with a slash is refused", doc: edited(func(m map[string]any) { m["data"] = "sub/acq.raw" }), field: "data", phrase: "contains a path separator"},
	{name: "data with a backslash is refused", doc: edited(func(m map[string]any) { m["data"] = `sub\acq.raw` }), field: "data", phrase: "contains a path separator"},
	{name: "data .. is refused", doc: edited(func(m map[string]any) { m["data"] = ".." }), field: "data", phrase: `".." is not a file name`},
	{name: "data ../x is refused", doc: edited(func(m map[string]any) { m["data"] = "../x" }), field: "data", phrase: "climbs out of the spool directory"},
	{name: "empty data is refused", doc: edited(func(m map[string]any) { m["data"] = "" }), field: "data", phrase: "must not be empty"},
	{name: "data with a NUL is refused", doc: edited(func(m map[string]any) { m["data"] = "a\x00b" }), field: "data", phrase: `control character '\x00'`},
	{name: "hidden data is refused", doc: edited(func(m map[string]any) { m["data"] = ".acq.raw" }), field: "data", phrase: "starts with '.'"},
	{name: "data named like a manifest is refused", doc: edited(func(m map[string]any) { m["data"] = "acq.json" }), field: "data", phrase: "ends in .json"},
	{name: "data named like a partial file is refused", doc: edited(func(m map[string]any) { m["data"] = "acq.raw.part" }), field: "data", phrase: "still being written"},
	{name: "a default data name from a hidden stem is refused", doc: edited(func(m map[string]any) { delete(m, "data"); delete(m, "name") }), stem: ".hidden", field: "data", phrase: "absent, and the default"},
	{name: "data as a number is refused", doc: edited(func(m map[string]any) { m["data"] = 7 }), field: "data", phrase: "want a string, got number"},

	// dtype and byte_order.
	{name: "a missing dtype is refused", doc: edited(func(m map[string]any) { delete(m, "dtype") }), field: "dtype", phrase: "required, one of uint8"},
	{name: "an unknown dtype is refused", doc: edited(func(m map[string]any) { m["dtype"] = "float16" }), field: "dtype", phrase: `"float16" is not one of uint8 int8`},
	{name: "a long bad dtype is shown cut short", doc: edited(func(m map[string]any) { m["dtype"] = strings.Repeat("é", 50) }), field: "dtype", phrase: `"` + strings.Repeat("é", 40) + `"… is not one of`},
	{name: "byte_order middle is refused", doc: edited(func(m map[string]any) { m["byte_order"] = "middle" }), field: "byte_order", phrase: `"middle" is not one of little big`},

	// name.
	{name: "a name with a slash is refused", doc: edited(func(m map[string]any) { m["name"] = "a/b" }), field: "name", phrase: `contains '/'`},
	{name: "the name .. is refused", doc: edited(func(m map[string]any) { m["name"] = ".." }), field: "name", phrase: `".." is not allowed`},
	{name: "a name of 129 characters is refused", doc: edited(func(m map[string]any) { m["name"] = strings.Repeat("n", 129) }), field: "name", phrase: "129 characters long, at most 128"},
	{name: "an empty name is refused", doc: edited(func(m map[string]any) { m["name"] = "" }), field: "name", phrase: "must not be empty"},
	{name: "an invalid stem needs an explicit name", doc: edited(func(m map[string]any) { delete(m, "name") }), stem: "acq 1", field: "name", phrase: "default (the file stem) is not a valid name"},

	// dimensions.
	{name: "missing dimensions are refused", doc: edited(func(m map[string]any) { delete(m, "dimensions") }), field: "dimensions", phrase: "required"},
	{name: "dimensions that are an object are refused", doc: edited(func(m map[string]any) { m["dimensions"] = map[string]any{} }), field: "dimensions", phrase: "want an array, got object"},
	{name: "zero dimensions are refused", doc: edited(func(m map[string]any) { m["dimensions"] = []any{} }), field: "dimensions", phrase: "has 0 dimensions, want 1…8"},
	{name: "nine dimensions are refused", doc: edited(func(m map[string]any) { m["dimensions"] = dims(9) }), field: "dimensions", phrase: "has 9 dimensions, want 1…8"},
	{name: "a dimension that is not an object is refused", doc: edited(func(m map[string]any) { m["dimensions"].([]any)[1] = 3 }), field: "dimensions[1]", phrase: "want an object, got number"},
	{name: "a missing dimension name is refused", doc: edited(func(m map[string]any) { delete(dim(m, 0), "name") }), field: "dimensions[0].name", phrase: "required"},
	{name: "an uppercase dimension name is refused", doc: edited(func(m map[string]any) { dim(m, 3)["name"] = "X" }), field: "dimensions[3].name", phrase: "must start with a lowercase letter"},
	{name: "a dimension name with a dash is refused", doc: edited(func(m map[string]any) { dim(m, 3)["name"] = "x-1" }), field: "dimensions[3].name", phrase: `contains '-'`},
	{name: "a duplicate dimension name is refused on the later one", doc: edited(func(m map[string]any) { dim(m, 3)["name"] = "y" }), field: "dimensions[3].name", phrase: "already the name of dimensions[2]"},
	{name: "an unknown dimension type is refused", doc: edited(func(m map[string]any) { dim(m, 2)["type"] = "spatial" }), field: "dimensions[2].type", phrase: `"spatial" is not one of time channel space other`},
	{name: "a missing size is refused", doc: edited(func(m map[string]any) { delete(dim(m, 2), "size") }), field: "dimensions[2].size", phrase: "required"},
	{name: "size 0 on dim 1 is refused", doc: edited(func(m map[string]any) { dim(m, 1)["size"] = 0 }), field: "dimensions[1].size", phrase: "0 is not ≥ 1"},
	{name: "a negative size on dim 0 is refused", doc: edited(func(m map[string]any) { dim(m, 0)["size"] = -1 }), field: "dimensions[0].size", phrase: "-1 is not ≥ 0"},
	{name: "a negative size on dim 2 is refused", doc: edited(func(m map[string]any) { dim(m, 2)["size"] = -2048 }), field: "dimensions[2].size", phrase: "-2048 is not ≥ 1"},
	{name: "a fractional size is refused", doc: edited(func(m map[string]any) { dim(m, 2)["size"] = 2048.5 }), field: "dimensions[2].size", phrase: "want an integer, got 2048.5"},
	{name: "a size in exponent form is refused", doc: strings.Replace(exampleManifest, `"size": 3,`, `"size": 3e0,`, 1), field: "dimensions[1].size", phrase: "want an integer, got 3e0"},
	{name: "a size as a string is refused", doc: edited(func(m map[string]any) { dim(m, 1)["size"] = "3" }), field: "dimensions[1].size", phrase: "want an integer, got string"},
	{name: "a size beyond int64 is refused", doc: strings.Replace(exampleManifest, `"size": 3,`, `"size": 99999999999999999999,`, 1), field: "dimensions[1].size", phrase: "does not fit in a 64-bit integer"},
	{name: "chunk 0 is refused", doc: edited(func(m map[string]any) { dim(m, 2)["chunk"] = 0 }), field: "dimensions[2].chunk", phrase: "0 is not in 1…2048"},
	{name: "a chunk larger than the size is refused", doc: edited(func(m map[string]any) { dim(m, 2)["chunk"] = 2049 }), field: "dimensions[2].chunk", phrase: "2049 is not in 1…2048"},
	{name: "chunk 0 on an inferred dim 0 is refused", doc: edited(func(m map[string]any) { dim(m, 0)["chunk"] = 0 }), field: "dimensions[0].chunk", phrase: "0 is not ≥ 1"},
	{name: "shard 0 is refused", doc: edited(func(m map[string]any) { dim(m, 3)["shard"] = 0 }), field: "dimensions[3].shard", phrase: "0 is not ≥ 1"},
	{name: "scale 0 is refused", doc: edited(func(m map[string]any) { dim(m, 2)["scale"] = 0 }), field: "dimensions[2].scale", phrase: "0 is not > 0"},
	{name: "a negative scale is refused", doc: edited(func(m map[string]any) { dim(m, 2)["scale"] = -0.5 }), field: "dimensions[2].scale", phrase: "-0.5 is not > 0"},
	{name: "a scale that underflows to 0 is refused", doc: strings.Replace(exampleManifest, `"scale": 0.65}`, `"scale": 1e-400}`, 1), field: "dimensions[2].scale", phrase: "1e-400 is not > 0"},
	{name: "an infinite scale is refused", doc: strings.Replace(exampleManifest, `"scale": 0.65}`, `"scale": 1e400}`, 1), field: "dimensions[2].scale", phrase: "not a finite 64-bit float"},
	{name: "an unknown space unit is refused with a suggestion", doc: edited(func(m map[string]any) { dim(m, 2)["unit"] = "micrometr" }), field: "dimensions[2].unit", phrase: `"micrometr" is not a space unit OME-NGFF 0.5 knows; did you mean "micrometer"?`},
	{name: "a furlong is not a space unit OME-NGFF knows", doc: edited(func(m map[string]any) { dim(m, 2)["unit"] = "furlong" }), field: "dimensions[2].unit", phrase: `"furlong" is not a space unit OME-NGFF 0.5 knows`},
	{name: "a space unit on a time axis is refused", doc: edited(func(m map[string]any) { dim(m, 0)["unit"] = "micrometer" }), field: "dimensions[0].unit", phrase: `"micrometer" is a space unit, but this is a time axis`},
	{name: "a unit on a channel axis is refused", doc: edited(func(m map[string]any) { dim(m, 1)["unit"] = "nanometer" }), field: "dimensions[1].unit", phrase: "a channel axis has no unit"},
	{name: "ome true with dimensions OME cannot hold names the rule", doc: edited(func(m map[string]any) {
		m["ome"] = true
		m["dimensions"] = []any{map[string]any{"name": "y", "size": 4}, map[string]any{"name": "x", "size": 4}, map[string]any{"name": "t", "size": 3}}
		delete(m, "channels")
	}), field: "ome", phrase: "t is out of place"},
	{name: "ome true with six dimensions is refused", doc: edited(func(m map[string]any) {
		m["ome"] = "true"
		m["dimensions"] = append(m["dimensions"].([]any), map[string]any{"name": "q", "size": 2}, map[string]any{"name": "r", "size": 2})
	}), field: "ome", phrase: "allows 2 to 5 axes, not 6"},
	{name: "an ome value other than auto, true, false is refused", doc: edited(func(m map[string]any) { m["ome"] = "yes" }), field: "ome", phrase: `"yes" is not one of "auto", true, false`},
	{name: "channels without a channel dimension are refused", doc: edited(func(m map[string]any) { dim(m, 1)["type"] = "other" }), field: "channels", phrase: "no dimension of type channel"},
	{name: "channels must match the channel count", doc: edited(func(m map[string]any) { m["channels"] = m["channels"].([]any)[:2] }), field: "channels", phrase: "has 2 entries, but dimension c has 3 channels"},
	{name: "a colour that is not RRGGBB is refused", doc: edited(func(m map[string]any) { m["channels"].([]any)[0].(map[string]any)["color"] = "blue" }), field: "channels[0].color", phrase: `"blue" is not a colour RRGGBB`},
	{name: "a window that ends before it starts is refused", doc: edited(func(m map[string]any) { m["channels"].([]any)[2].(map[string]any)["window"] = []any{3000, 100} }), field: "channels[2].window", phrase: "start 3000 is not below end 100"},
	{name: "channels with ome false are refused", doc: edited(func(m map[string]any) { m["ome"] = false }), field: "channels", phrase: "ome: false leaves out"},
	{name: "a unit with a newline is refused", doc: edited(func(m map[string]any) { dim(m, 2)["unit"] = "micro\nmeter" }), field: "dimensions[2].unit", phrase: `control character '\n'`},
	{name: "downsample as a string is refused", doc: edited(func(m map[string]any) { dim(m, 2)["downsample"] = "yes" }), field: "dimensions[2].downsample", phrase: "want a boolean, got string"},

	// Shape rules across dimensions.
	{name: "a chunk over 1 GiB is refused", doc: edited(func(m map[string]any) {
		m["dtype"] = "uint64"
		m["dimensions"] = []any{map[string]any{"name": "y", "size": 16384, "chunk": 16384}, map[string]any{"name": "x", "size": 16384, "chunk": 16384}}
	}), field: "dimensions", phrase: "a chunk of 2147483648 bytes exceeds 1 GiB"},
	{name: "a frame beyond 2^63 bytes is refused", doc: edited(func(m map[string]any) {
		dim(m, 2)["size"] = int64(1) << 62
		dim(m, 3)["size"] = int64(1) << 62
	}), field: "dimensions", phrase: "a frame (one index of dimensions[0]) exceeds 2^63 bytes"},
	{name: "an array beyond 2^63 bytes is refused", doc: `{"version":1,"dtype":"uint16","dimensions":[{"name":"t","size":4611686018427387904}]}`, field: "dimensions", phrase: "the array of 4611686018427387904 frames of 2 bytes exceeds 2^63 bytes"},
	{name: "a shard beyond 2^63 bytes is refused", doc: edited(func(m map[string]any) {
		dim(m, 0)["shard"] = int64(1) << 40
		dim(m, 1)["shard"] = int64(1) << 40
	}), field: "dimensions", phrase: "a shard of that many chunks exceeds 2^63 bytes"},

	// multiscale.
	{name: "multiscale method median is refused", doc: edited(func(m map[string]any) { m["multiscale"].(map[string]any)["method"] = "median" }), field: "multiscale.method", phrase: `"median" is not one of mean min max decimate`},
	{name: "multiscale levels -1 is refused", doc: edited(func(m map[string]any) { m["multiscale"].(map[string]any)["levels"] = -1 }), field: "multiscale.levels", phrase: "-1 is not in 0…32"},
	{name: "multiscale levels 33 is refused", doc: edited(func(m map[string]any) { m["multiscale"].(map[string]any)["levels"] = 33 }), field: "multiscale.levels", phrase: "33 is not in 0…32"},
	{name: "multiscale as an array is refused", doc: edited(func(m map[string]any) { m["multiscale"] = []any{} }), field: "multiscale", phrase: "want an object, got array"},

	// compression.
	{name: "codec lz4 is refused", doc: edited(func(m map[string]any) { m["compression"].(map[string]any)["codec"] = "lz4" }), field: "compression.codec", phrase: `"lz4" is not one of zstd none`},
	{name: "compression level 23 is refused", doc: edited(func(m map[string]any) { m["compression"].(map[string]any)["level"] = 23 }), field: "compression.level", phrase: "23 is not in -7…22"},
	{name: "compression level -8 is refused", doc: edited(func(m map[string]any) { m["compression"].(map[string]any)["level"] = -8 }), field: "compression.level", phrase: "-8 is not in -7…22"},
	{name: "compression as a string is refused", doc: edited(func(m map[string]any) { m["compression"] = "zstd" }), field: "compression", phrase: "want an object, got string"},

	// attributes.
	{name: "attributes with ome are refused", doc: edited(func(m map[string]any) { m["attributes"].(map[string]any)["ome"] = map[string]any{} }), field: "attributes.ome", phrase: "reserved for OME-Zarr metadata"},
	{name: "attributes with zspool are refused", doc: edited(func(m map[string]any) { m["attributes"].(map[string]any)["zspool"] = map[string]any{} }), field: "attributes.zspool", phrase: "reserved for zspool's provenance block"},
	{name: "attributes with an escaped ome are refused", doc: strings.Replace(exampleManifest, `"instrument"`, `"\u006fme"`, 1), field: "attributes.ome", phrase: "reserved for OME-Zarr metadata"},
	{name: "attributes as an array are refused", doc: edited(func(m map[string]any) { m["attributes"] = []any{1} }), field: "attributes", phrase: "want an object, got array"},
	{name: "attributes as a string are refused", doc: edited(func(m map[string]any) { m["attributes"] = "x" }), field: "attributes", phrase: "want an object, got string"},
	{name: "a duplicate nested attribute key is refused", doc: strings.Replace(exampleManifest, `"operator": "ab"`, `"operator": [{"k": 1, "k": 2}]`, 1), field: "attributes.operator[0].k", phrase: "appears more than once"},
}

func TestEachBrokenRuleIsReportedOnceWithItsField(t *testing.T) {
	if len(badCases) < 30 {
		t.Fatalf("only %d bad cases", len(badCases))
	}
	for _, tt := range badCases {
		t.Run(tt.name, func(t *testing.T) {
			stem := exampleStem
			if tt.stem != "" {
				stem = tt.stem
			}
			m, err := ParseManifest([]byte(tt.doc), stem)
			if err == nil {
				t.Fatalf("accepted %s\nas %+v", tt.doc, m)
			}
			if m != nil {
				t.Errorf("returned a manifest beside the error")
			}
			leaves := leafErrors(err)
			if len(leaves) != 1+tt.also {
				t.Errorf("want exactly %d violation(s), got %d:\n%v", 1+tt.also, len(leaves), err)
			}
			var fe *FieldError
			isField := errors.As(err, &fe)
			if tt.field == "" {
				if isField {
					t.Errorf("want a document error, got field error %q", fe)
				}
			} else if !isField || fe.Field != tt.field {
				t.Errorf("want an error on field %s, got %q", tt.field, err)
			}
			if !strings.Contains(err.Error(), tt.phrase) {
				t.Errorf("error %q does not say %q", err, tt.phrase)
			}
			if tt.field != "" && !strings.Contains(err.Error(), tt.field+": ") {
				t.Errorf("error %q does not start with its field path", err)
			}
		})
	}
}
