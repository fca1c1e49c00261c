package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/zspool/zspool/zarr"
)

var manifestFields = []string{"version", "data", "dtype", "byte_order", "name", "dimensions", "multiscale", "compression", "channels", "ome", "attributes"}

var (
	dtypes          = []string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64"}
	byteOrders      = []string{"little", "big"}
	multiscaleKeys  = []string{"method", "levels"}
	methods         = []string{"mean", "min", "max", "decimate"}
	compressionKeys = []string{"codec", "level"}
	codecs          = []string{"zstd", "none"}
)

const (
	maxLevels         = 32
	minZstdLevel      = -7
	maxZstdLevel      = 22
	defaultZstdLevel  = 1
	defaultCodec      = "zstd"
	defaultMethod     = "mean"
	defaultOrder      = "little"
	rawFileSuffix     = ".raw"
	reservedAttrKey   = "ome"
	provenanceAttrKey = "zspool"
)

// ParseManifest parses, defaults and validates an acquisition manifest
// (MANIFEST.md). stem is the manifest's file name without ".json"; it gives
// the defaults of data (stem + ".raw") and name (stem).
//
// The document must be exactly one JSON object in UTF-8 (a leading byte
// order mark is ignored), with no unknown, misspelt or repeated keys at any
// level that the manifest defines. Errors about the document as a whole
// (empty, not JSON, trailing data, not an object) are plain errors. Rule
// violations are *FieldError values, all of them, joined with errors.Join.
// On success every field of the Manifest holds its final value.
func ParseManifest(data []byte, stem string) (*Manifest, error) {
	raw, err := readDocument(data)
	if err != nil {
		return nil, err
	}
	var p problems
	top, _ := readObject(raw, "", manifestFields, &p)
	m := &Manifest{}

	parseVersion(top, m, &p)
	parseData(top, stem, m, &p)
	dtypeOK := parseDType(top, m, &p)
	m.ByteOrder = oneOfAt(top, "byte_order", "byte_order", defaultOrder, byteOrders, &p)
	parseName(top, stem, m, &p)
	parseOMEChoice(top, m, &p)

	before := len(p)
	if rawDims, given := top["dimensions"]; !given {
		p.add("dimensions", "required: 1…%d dimensions", maxDimensions)
	} else {
		dims := parseDimensions(rawDims, &p)
		m.Dimensions = dims.dims
		if dtypeOK && dims.shapeOK {
			checkShape(m, dims.shardGiven, &p)
		}
	}

	// Rules about the dimensions as a whole (OME's axis order, channels
	// per channel) only make sense over dimensions without problems.
	dimsClean := len(p) == before
	parseMultiscale(top, m, &p)
	parseCompression(top, m, &p)
	parseAttributes(top, m, &p)
	parseChannels(top, m, dimsClean, &p)
	if dimsClean {
		checkOME(m, &p)
	}

	if len(p) > 0 {
		return nil, errors.Join(p...)
	}
	return m, nil
}

func parseVersion(top map[string]json.RawMessage, m *Manifest, p *problems) {
	raw, given := top["version"]
	if !given {
		p.add("version", "required, must be %d", ManifestVersion)
		return
	}
	v, ok := decodeInt(raw, "version", p)
	if !ok {
		return
	}
	if v != ManifestVersion {
		p.add("version", "%d is not supported, must be %d", v, ManifestVersion)
		return
	}
	m.Version = ManifestVersion
}

func parseData(top map[string]json.RawMessage, stem string, m *Manifest, p *problems) {
	raw, given := top["data"]
	if !given {
		name := stem + rawFileSuffix
		if msg := dataFileProblem(name); msg != "" {
			p.add("data", "absent, and the default (stem + %q) is not usable: %s", rawFileSuffix, msg)
			return
		}
		m.Data = name
		return
	}
	name, ok := decodeString(raw, "data", p)
	if !ok {
		return
	}
	if msg := dataFileProblem(name); msg != "" {
		p.add("data", "%s", msg)
		return
	}
	m.Data = name
}

func parseDType(top map[string]json.RawMessage, m *Manifest, p *problems) bool {
	raw, given := top["dtype"]
	if !given {
		p.add("dtype", "required, one of %s", strings.Join(dtypes, " "))
		return false
	}
	t, ok := decodeString(raw, "dtype", p)
	if !ok {
		return false
	}
	if !slices.Contains(dtypes, t) {
		p.add("dtype", "%s is not one of %s", quote(t), strings.Join(dtypes, " "))
		return false
	}
	m.DType = zarr.DType(t)
	return true
}

func parseName(top map[string]json.RawMessage, stem string, m *Manifest, p *problems) {
	raw, given := top["name"]
	if !given {
		if msg := datasetNameProblem(stem); msg != "" {
			p.add("name", "absent, and the default (the file stem) is not a valid name: %s; give a name explicitly", msg)
			return
		}
		m.Name = stem
		return
	}
	name, ok := decodeString(raw, "name", p)
	if !ok {
		return
	}
	if msg := datasetNameProblem(name); msg != "" {
		p.add("name", "%s", msg)
		return
	}
	m.Name = name
}

// oneOfAt reads the optional string member key of obj, at path field,
// which must be one of allowed; def when absent. The returned value is only
// meaningful when no problem was added.
func oneOfAt(obj map[string]json.RawMessage, key, field, def string, allowed []string, p *problems) string {
	raw, given := obj[key]
	if !given {
		return def
	}
	s, ok := decodeString(raw, field, p)
	if !ok {
		return def
	}
	if !slices.Contains(allowed, s) {
		p.add(field, "%s is not one of %s", quote(s), strings.Join(allowed, " "))
		return def
	}
	return s
}

// intInRange reads the optional integer member key of obj, which must lie
// in lo…hi; def when absent.
func intInRange(obj map[string]json.RawMessage, key, field string, def, lo, hi int64, p *problems) int64 {
	raw, given := obj[key]
	if !given {
		return def
	}
	n, ok := decodeInt(raw, field, p)
	if !ok {
		return def
	}
	if n < lo || n > hi {
		p.add(field, "%d is not in %d…%d", n, lo, hi)
		return def
	}
	return n
}

// parseMultiscale reads the optional pyramid request. Absent or null means
// level 0 only, and Multiscale stays nil.
func parseMultiscale(top map[string]json.RawMessage, m *Manifest, p *problems) {
	raw, given := top["multiscale"]
	if !given || isNull(raw) {
		return
	}
	obj, ok := readObject(raw, "multiscale", multiscaleKeys, p)
	if !ok {
		return
	}
	m.Multiscale = &Multiscale{
		Method: oneOfAt(obj, "method", "multiscale.method", defaultMethod, methods, p),
		Levels: int(intInRange(obj, "levels", "multiscale.levels", 0, 0, maxLevels, p)),
	}
}

// parseCompression reads the optional chunk codec; absent or null means
// zstd at level 1.
func parseCompression(top map[string]json.RawMessage, m *Manifest, p *problems) {
	m.Compression = Compression{Codec: defaultCodec, Level: defaultZstdLevel}
	raw, given := top["compression"]
	if !given || isNull(raw) {
		return
	}
	obj, ok := readObject(raw, "compression", compressionKeys, p)
	if !ok {
		return
	}
	m.Compression = Compression{
		Codec: oneOfAt(obj, "codec", "compression.codec", defaultCodec, codecs, p),
		Level: int(intInRange(obj, "level", "compression.level", defaultZstdLevel, minZstdLevel, maxZstdLevel, p)),
	}
}

// parseAttributes keeps the optional free attributes as compact JSON. They
// are copied into the group's attributes, where "ome" belongs to OME-Zarr
// and "zspool" to the provenance block.
func parseAttributes(top map[string]json.RawMessage, m *Manifest, p *problems) {
	raw, given := top["attributes"]
	if !given || isNull(raw) {
		return
	}
	if k := jsonKind(raw); k != "object" {
		p.add("attributes", "want an object, got %s", k)
		return
	}
	before := len(*p)
	checkKeys(raw, "attributes", map[string]string{
		reservedAttrKey: "reserved for OME-Zarr metadata",
		// The group's provenance block lives beside the free attributes;
		// refusing the key beats silently overwriting the user's value.
		provenanceAttrKey: "reserved for zspool's provenance block",
	}, p)
	if len(*p) > before {
		return
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		p.add("attributes", "malformed object") // unreachable for a checked document
		return
	}
	m.Attributes = json.RawMessage(buf.Bytes())
}
