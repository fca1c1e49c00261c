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
// one dataset per level from high to low resolution, how the levels were
// made, and the channels' display settings. nil when the dataset is a
// plain Zarr v3 group (ome false, or dimensions OME cannot hold).
func (p *Plan) OME(version string) *zarr.OME {
	m := p.Manifest
	if !m.WritesOME() {
		return nil
	}
	ms := zarr.Multiscale{Name: m.Name, Type: "none", Metadata: &zarr.MultiscaleMetadata{
		Description: "a single level: nothing downsampled", Method: "none", Version: version}}
	if len(p.Levels) > 1 {
		var dims []string
		for _, dim := range m.Dimensions {
			if dim.Downsampled() {
				dims = append(dims, dim.Name)
			}
		}
		ms.Type = m.Multiscale.Method
		ms.Metadata = &zarr.MultiscaleMetadata{
			Description: "each level reduces 2×…×2 boxes of the level before it over the downsampled dims (in-bounds elements only; sizes halve rounding up)",
			Method:      "zspool." + m.Multiscale.Method, Version: version,
			Kwargs: map[string]any{"factor": 2, "dims": dims, "cascade": true},
		}
	}
	for _, dim := range m.Dimensions {
		ms.Axes = append(ms.Axes, zarr.Axis{Name: dim.Name, Type: dim.Type, Unit: dim.Unit})
	}
	for _, l := range p.Levels {
		ts := []zarr.Transform{{Type: "scale", Scale: l.Scale}}
		if l.Translation != nil {
			ts = append(ts, zarr.Transform{Type: "translation", Translation: l.Translation})
		}
		ms.Datasets = append(ms.Datasets, zarr.MultiscaleDataset{Path: l.Path, CoordinateTransformations: ts})
	}
	ome := &zarr.OME{Version: "0.5", Multiscales: []zarr.Multiscale{ms}}
	if len(m.Channels) > 0 {
		lo, hi := m.DType.Range()
		ome.Omero = &zarr.Omero{}
		for _, c := range m.Channels {
			w := zarr.OmeroWindow{Start: lo, End: hi, Min: lo, Max: hi}
			if c.Window != nil {
				w.Start, w.End = c.Window[0], c.Window[1]
				w.Min, w.Max = min(lo, w.Start), max(hi, w.End)
			}
			ome.Omero.Channels = append(ome.Omero.Channels, zarr.OmeroChannel{Label: c.Label, Color: c.Color, Active: true, Window: w})
		}
	}
	return ome
}

// GroupDocument is the dataset's root zarr.json, written last.
func (p *Plan) GroupDocument(prov Provenance) ([]byte, error) {
	return zarr.GroupDocument(p.OME(prov.Version), p.Manifest.Attributes, prov)
}

// Root is the dataset's key prefix in the destination.
func (p *Plan) Root() string { return DatasetRoot(p.Manifest.Name) }

// DatasetRoot is the key prefix of the dataset called name.
func DatasetRoot(name string) string { return name + ".ome.zarr" }
