package pipeline

import (
	"github.com/zspool/zspool/zarr"
)

// Provenance is the group's attributes.zspool block: where the dataset came
// from. It holds nothing that changes between two runs over the same input,
// so reruns and resumed runs write byte-identical documents.
type Provenance struct {
	Version  string `json:"version"`
	Manifest string `json:"manifest"`
	Data     string `json:"data"`
	Bytes    int64  `json:"bytes"`
}

// ArraySpec is level l's array description.
func (p *Plan) ArraySpec(l Level) zarr.ArraySpec {
	m := p.Manifest
	names := make([]string, len(m.Dimensions))
	for d, dim := range m.Dimensions {
		names[d] = dim.Name
	}
	return zarr.ArraySpec{
		Grid:     l.Grid,
		DataType: string(m.DType),
		Endian:   m.ByteOrder,
		Codec:    m.Compression.Codec,
		Level:    m.Compression.Level,
		DimNames: names,
	}
}

// OME is the group's attributes.ome: axes from the manifest's dimensions,
// one dataset per level from high to low resolution.
func (p *Plan) OME() zarr.OME {
	m := p.Manifest
	ms := zarr.Multiscale{Name: m.Name}
	if m.Multiscale != nil {
		ms.Type = m.Multiscale.Method
	}
	for _, dim := range m.Dimensions {
		ms.Axes = append(ms.Axes, zarr.Axis{Name: dim.Name, Type: dim.Type, Unit: dim.Unit})
	}
	for _, l := range p.Levels {
		ms.Datasets = append(ms.Datasets, zarr.MultiscaleDataset{
			Path:                      l.Path,
			CoordinateTransformations: []zarr.Transform{{Type: "scale", Scale: l.Scale}},
		})
	}
	return zarr.OME{Version: "0.5", Multiscales: []zarr.Multiscale{ms}}
}

// GroupDocument is the dataset's root zarr.json, written last.
func (p *Plan) GroupDocument(prov Provenance) ([]byte, error) {
	return zarr.GroupDocument(p.OME(), p.Manifest.Attributes, prov)
}

// Root is the dataset's key prefix in the destination.
func (p *Plan) Root() string { return p.Manifest.Name + ".ome.zarr" }
