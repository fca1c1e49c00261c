package zarr

import (
	"encoding/json"
	"fmt"
)

// ArrayMetadata is an array's zarr.json (Zarr v3). Field order is the
// order written.
type ArrayMetadata struct {
	ZarrFormat       int             `json:"zarr_format"`
	NodeType         string          `json:"node_type"`
	Shape            []int64         `json:"shape"`
	DataType         string          `json:"data_type"`
	ChunkGrid        NamedConfig     `json:"chunk_grid"`
	ChunkKeyEncoding NamedConfig     `json:"chunk_key_encoding"`
	FillValue        json.RawMessage `json:"fill_value"`
	Codecs           []NamedConfig   `json:"codecs"`
	DimensionNames   []string        `json:"dimension_names,omitempty"`
}

// NamedConfig is Zarr v3's `{"name": …, "configuration": {…}}` shape.
type NamedConfig struct {
	Name          string          `json:"name"`
	Configuration json.RawMessage `json:"configuration,omitempty"`
}

type regularGrid struct {
	ChunkShape []int64 `json:"chunk_shape"`
}

type keyEncoding struct {
	Separator string `json:"separator"`
}

// ShardingConfig is the configuration of the sharding_indexed codec.
type ShardingConfig struct {
	ChunkShape    []int64       `json:"chunk_shape"`
	Codecs        []NamedConfig `json:"codecs"`
	IndexCodecs   []NamedConfig `json:"index_codecs"`
	IndexLocation string        `json:"index_location"`
}

type bytesConfig struct {
	Endian string `json:"endian"`
}

// ZstdConfig is the zstd codec's configuration.
type ZstdConfig struct {
	Level    int  `json:"level"`
	Checksum bool `json:"checksum"`
}

// ArraySpec is what the writer knows about an array; ArrayDocument turns it
// into zarr.json.
type ArraySpec struct {
	Grid     Grid
	DataType string // Zarr v3 data type name, e.g. "uint16"
	Endian   string // "little" or "big"
	Codec    string // "zstd" or "none"
	Level    int    // zstd level
	DimNames []string
}

func mustRaw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Only fixed Go structs reach here; a failure is a programming error
		// caught by the metadata tests, never by user input.
		panic(fmt.Sprintf("zarr: marshal %T: %v", v, err))
	}
	return b
}

// InnerCodecs is the chunk codec chain inside the shard: bytes, then zstd
// unless compression is off.
func (s ArraySpec) InnerCodecs() []NamedConfig {
	codecs := []NamedConfig{{Name: "bytes", Configuration: mustRaw(bytesConfig{Endian: s.Endian})}}
	if s.Codec == "zstd" {
		codecs = append(codecs, NamedConfig{Name: "zstd", Configuration: mustRaw(ZstdConfig{Level: s.Level})})
	}
	return codecs
}

// Metadata builds the array's zarr.json document.
func (s ArraySpec) Metadata() ArrayMetadata {
	fill := json.RawMessage("0")
	if s.DataType == "float32" || s.DataType == "float64" {
		fill = json.RawMessage("0.0")
	}
	sharding := ShardingConfig{
		ChunkShape: s.Grid.Chunk,
		Codecs:     s.InnerCodecs(),
		IndexCodecs: []NamedConfig{
			{Name: "bytes", Configuration: mustRaw(bytesConfig{Endian: "little"})},
			{Name: "crc32c"},
		},
		IndexLocation: "end",
	}
	return ArrayMetadata{
		ZarrFormat:       3,
		NodeType:         "array",
		Shape:            s.Grid.Shape,
		DataType:         s.DataType,
		ChunkGrid:        NamedConfig{Name: "regular", Configuration: mustRaw(regularGrid{ChunkShape: s.Grid.ShardShape()})},
		ChunkKeyEncoding: NamedConfig{Name: "default", Configuration: mustRaw(keyEncoding{Separator: "/"})},
		FillValue:        fill,
		Codecs:           []NamedConfig{{Name: "sharding_indexed", Configuration: mustRaw(sharding)}},
		DimensionNames:   s.DimNames,
	}
}

// Document is the indented JSON of the array's zarr.json.
func (s ArraySpec) Document() []byte {
	b, _ := json.MarshalIndent(s.Metadata(), "", "  ")
	return append(b, '\n')
}

// GroupMetadata is the dataset root's zarr.json.
type GroupMetadata struct {
	ZarrFormat int                        `json:"zarr_format"`
	NodeType   string                     `json:"node_type"`
	Attributes map[string]json.RawMessage `json:"attributes"`
}

// OME is attributes.ome of an OME-Zarr 0.5 image.
type OME struct {
	Version     string       `json:"version"`
	Multiscales []Multiscale `json:"multiscales"`
	Omero       *Omero       `json:"omero,omitempty"`
}

// Multiscale is one OME multiscales entry.
type Multiscale struct {
	Axes     []Axis              `json:"axes"`
	Datasets []MultiscaleDataset `json:"datasets"`
	Type     string              `json:"type,omitempty"`
	Name     string              `json:"name,omitempty"`
	Metadata *MultiscaleMetadata `json:"metadata,omitempty"`
}

// MultiscaleMetadata says how the levels were made, in the fields the
// spec suggests (description, method, version, kwargs).
type MultiscaleMetadata struct {
	Description string         `json:"description"`
	Method      string         `json:"method"`
	Version     string         `json:"version"`
	Kwargs      map[string]any `json:"kwargs,omitempty"`
}

// Omero is the OME omero block: how viewers show the channels.
type Omero struct {
	Channels []OmeroChannel `json:"channels"`
}

// OmeroChannel is one channel's display settings.
type OmeroChannel struct {
	Label  string      `json:"label"`
	Color  string      `json:"color"`
	Active bool        `json:"active"`
	Window OmeroWindow `json:"window"`
}

// OmeroWindow is a channel's display window (start, end) within the range
// its values can take (min, max).
type OmeroWindow struct {
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
}

// Axis is one OME axis.
type Axis struct {
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
	Unit string `json:"unit,omitempty"`
}

// MultiscaleDataset is one resolution level of a multiscale.
type MultiscaleDataset struct {
	Path                      string      `json:"path"`
	CoordinateTransformations []Transform `json:"coordinateTransformations"`
}

// Transform is an OME coordinate transformation; zspool writes only scale.
type Transform struct {
	Type        string    `json:"type"`
	Scale       []float64 `json:"scale,omitempty"`
	Translation []float64 `json:"translation,omitempty"`
}

// GroupDocument builds the root zarr.json: free attributes (a JSON object
// or nil), then the OME block (none for a plain Zarr v3 group) and
// zspool's provenance block.
func GroupDocument(ome *OME, free json.RawMessage, provenance any) ([]byte, error) {
	attrs := map[string]json.RawMessage{}
	if len(free) > 0 && string(free) != "null" {
		if err := json.Unmarshal(free, &attrs); err != nil {
			return nil, fmt.Errorf("group attributes: %w", err)
		}
	}
	// The OME and provenance blocks would silently overwrite a free
	// attribute of the same name: refuse it instead of dropping user data.
	for _, k := range []string{"ome", "zspool"} {
		if _, ok := attrs[k]; ok {
			return nil, fmt.Errorf("group attributes: %q is reserved", k)
		}
	}
	if ome != nil {
		omeRaw, err := json.Marshal(ome)
		if err != nil {
			return nil, fmt.Errorf("group attributes.ome: %w", err)
		}
		attrs["ome"] = omeRaw
	}
	if provenance != nil {
		p, err := json.Marshal(provenance)
		if err != nil {
			return nil, fmt.Errorf("group attributes.zspool: %w", err)
		}
		attrs["zspool"] = p
	}
	b, err := json.MarshalIndent(GroupMetadata{ZarrFormat: 3, NodeType: "group", Attributes: attrs}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("group zarr.json: %w", err)
	}
	return append(b, '\n'), nil
}
