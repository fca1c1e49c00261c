// Package config owns zspool's two user-facing documents: the acquisition
// manifest (MANIFEST.md) and, later, the daemon's configuration file. It
// parses them strictly, fills every default and validates every rule before
// any byte of data is touched.
package config

import (
	"encoding/json"

	"github.com/zspool/zspool/zarr"
)

// ManifestVersion is the only manifest version this build understands.
const ManifestVersion = 1

// Manifest is a parsed, defaulted and validated acquisition manifest.
// After ParseManifest returns without error every field holds its final
// value: Data and Name are set, every dimension has Chunk, Shard, Type and
// Scale filled in, and Compression is complete.
type Manifest struct {
	Version     int             `json:"version"`
	Data        string          `json:"data"`
	DType       zarr.DType      `json:"dtype"`
	ByteOrder   string          `json:"byte_order"` // "little" or "big"
	Name        string          `json:"name"`
	Dimensions  []Dimension     `json:"dimensions"`
	Multiscale  *Multiscale     `json:"multiscale,omitempty"` // nil: level 0 only
	Compression Compression     `json:"compression"`
	Attributes  json.RawMessage `json:"attributes,omitempty"` // a JSON object or absent
	OME         string          `json:"ome"`                  // auto, true or false: see OMERule
	Channels    []Channel       `json:"channels,omitempty"`   // one per index of the channel dim, or none
}

// Dimension is one axis of the raw array, listed slowest to fastest.
type Dimension struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"`            // time, channel, space, other
	Size       int64   `json:"size"`            // dim 0 may be 0: inferred from the file size
	Chunk      int64   `json:"chunk"`           // elements per chunk along this dim
	Shard      int64   `json:"shard"`           // chunks per shard along this dim
	Unit       string  `json:"unit,omitempty"`  // OME axis unit: the spec's name for space and time axes
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
