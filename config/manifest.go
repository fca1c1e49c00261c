// Package config owns zspool's two user-facing documents: the acquisition
// manifest (MANIFEST.md) and, later, the daemon's configuration file. It
// parses them strictly, fills every default and validates every rule before
// any byte of data is touched.
package config

import "encoding/json"

// ManifestVersion is the only manifest version this build understands.
const ManifestVersion = 1

// Manifest is a parsed, defaulted and validated acquisition manifest.
// After ParseManifest returns without error every field holds its final
// value: Data and Name are set, every dimension has Chunk, Shard, Type and
// Scale filled in, and Compression is complete.
type Manifest struct {
	Version     int             `json:"version"`
	Data        string          `json:"data"`
	DType       DType           `json:"dtype"`
	ByteOrder   string          `json:"byte_order"` // "little" or "big"
	Name        string          `json:"name"`
	Dimensions  []Dimension     `json:"dimensions"`
	Multiscale  *Multiscale     `json:"multiscale,omitempty"` // nil: level 0 only
	Compression Compression     `json:"compression"`
	Attributes  json.RawMessage `json:"attributes,omitempty"` // a JSON object or absent
}

// Dimension is one axis of the raw array, listed slowest to fastest.
type Dimension struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"`            // time, channel, space, other
	Size       int64   `json:"size"`            // dim 0 may be 0: inferred from the file size
	Chunk      int64   `json:"chunk"`           // elements per chunk along this dim
	Shard      int64   `json:"shard"`           // chunks per shard along this dim
	Unit       string  `json:"unit,omitempty"`  // OME axis unit, free text
	Scale      float64 `json:"scale,omitempty"` // OME scale, > 0
	Downsample *bool   `json:"downsample,omitempty"`
}

// Downsampled reports whether multiscale levels halve this dimension.
func (d Dimension) Downsampled() bool {
	if d.Downsample != nil {
		return *d.Downsample
	}
	return d.Type == "space"
}

// Multiscale selects the pyramid written beside level 0.
type Multiscale struct {
	Method string `json:"method"` // mean, min, max, decimate
	Levels int    `json:"levels"` // 0 = automatic, N = at most N levels including level 0
}

// Compression is the chunk codec after the bytes codec.
type Compression struct {
	Codec string `json:"codec"` // zstd or none
	Level int    `json:"level"` // -7…22
}

// DType is a manifest data type name; the same names are Zarr v3 data types.
type DType string

// Size is the element size in bytes, or 0 for an unknown type.
func (t DType) Size() int {
	switch t {
	case "uint8", "int8":
		return 1
	case "uint16", "int16":
		return 2
	case "uint32", "int32", "float32":
		return 4
	case "uint64", "int64", "float64":
		return 8
	}
	return 0
}

// IsFloat reports whether the type is an IEEE-754 float.
func (t DType) IsFloat() bool { return t == "float32" || t == "float64" }

// IsSigned reports whether the type is a signed integer.
func (t DType) IsSigned() bool {
	return t == "int8" || t == "int16" || t == "int32" || t == "int64"
}
