package config

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
)

const maxDimensions = 8

var dimensionFields = []string{"name", "type", "size", "chunk", "shard", "unit", "scale", "downsample"}

var dimensionTypes = []string{"time", "channel", "space", "other"}

// parsedDims is the dimensions array after per-field checks.
type parsedDims struct {
	dims       []Dimension
	shardGiven []bool // shard was written in the manifest, so it keeps its value
	// shapeOK: every dimension has a valid size, chunk and (given) shard,
	// so shape arithmetic (chunk bytes, default shards) is meaningful.
	shapeOK bool
}

// parseDimensions reads and checks the dimensions array, filling every
// default except the shards, which need the whole shape (see fillShards).
func parseDimensions(raw json.RawMessage, p *problems) parsedDims {
	const path = "dimensions"
	elems, ok := readArray(raw, path, p)
	if !ok {
		return parsedDims{}
	}
	if n := len(elems); n < 1 || n > maxDimensions {
		p.add(path, "has %d dimensions, want 1…%d", n, maxDimensions)
		return parsedDims{}
	}
	out := parsedDims{
		dims:       make([]Dimension, len(elems)),
		shardGiven: make([]bool, len(elems)),
		shapeOK:    true,
	}
	firstUse := map[string]int{} // dimension name → index of its first use
	for i, elem := range elems {
		dimPath := indexPath(path, i)
		fields, ok := readObject(elem, dimPath, dimensionFields, p)
		if !ok {
			out.shapeOK = false
			continue
		}
		d := &out.dims[i]
		parseDimName(fields, dimPath, i, d, firstUse, p)
		parseDimType(fields, dimPath, d, p)
		shapeOK, shardGiven := parseDimShape(fields, dimPath, i, d, p)
		out.shapeOK = out.shapeOK && shapeOK
		out.shardGiven[i] = shardGiven
		parseDimAxis(fields, dimPath, d, p)
	}
	return out
}

func parseDimName(fields map[string]json.RawMessage, dimPath string, i int, d *Dimension, firstUse map[string]int, p *problems) {
	field := dimPath + ".name"
	raw, given := fields["name"]
	if !given {
		p.add(field, "required")
		return
	}
	name, ok := decodeString(raw, field, p)
	if !ok {
		return
	}
	if msg := dimensionNameProblem(name); msg != "" {
		p.add(field, "%s", msg)
		return
	}
	if j, dup := firstUse[name]; dup {
		p.add(field, "%s is already the name of dimensions[%d]; names must be unique", quote(name), j)
		return
	}
	firstUse[name] = i
	d.Name = name
}

func parseDimType(fields map[string]json.RawMessage, dimPath string, d *Dimension, p *problems) {
	d.Type = inferDimType(d.Name)
	raw, given := fields["type"]
	if !given {
		return
	}
	field := dimPath + ".type"
	t, ok := decodeString(raw, field, p)
	if !ok {
		return
	}
	if !slices.Contains(dimensionTypes, t) {
		p.add(field, "%s is not one of %s", quote(t), strings.Join(dimensionTypes, " "))
		return
	}
	d.Type = t
}

// parseDimShape reads size, chunk and shard; shapeOK says all three are
// valid (or, for the shard, absent). Dimension 0 is the append
// dimension: its size may be 0 ("infer from the file size") and its chunk
// defaults to 1 frame. Other dimensions default to one chunk spanning the
// whole size, or 256 elements once the size reaches 512.
func parseDimShape(fields map[string]json.RawMessage, dimPath string, i int, d *Dimension, p *problems) (shapeOK, shardGiven bool) {
	sizeOK := false
	if raw, given := fields["size"]; !given {
		p.add(dimPath+".size", "required")
	} else if size, ok := decodeInt(raw, dimPath+".size", p); ok {
		switch {
		case i == 0 && size < 0:
			p.add(dimPath+".size", "%d is not ≥ 0 (0 means: infer from the file size)", size)
		case i > 0 && size < 1:
			p.add(dimPath+".size", "%d is not ≥ 1 (only dimensions[0] may be 0)", size)
		default:
			d.Size, sizeOK = size, true
		}
	}

	chunkOK := false
	if raw, given := fields["chunk"]; given {
		field := dimPath + ".chunk"
		if chunk, ok := decodeInt(raw, field, p); ok {
			switch {
			case sizeOK && d.Size > 0 && (chunk < 1 || chunk > d.Size):
				p.add(field, "%d is not in 1…%d", chunk, d.Size)
			case chunk < 1:
				p.add(field, "%d is not ≥ 1", chunk)
			default:
				d.Chunk, chunkOK = chunk, sizeOK
			}
		}
	} else if sizeOK {
		d.Chunk, chunkOK = defaultChunk(i, d.Size), true
	}

	shardOK := true // an absent shard is filled in later
	if raw, given := fields["shard"]; given {
		shardGiven, shardOK = true, false
		field := dimPath + ".shard"
		if shard, ok := decodeInt(raw, field, p); ok {
			if shard < 1 {
				p.add(field, "%d is not ≥ 1 (chunks per shard)", shard)
			} else {
				d.Shard, shardOK = shard, true
			}
		}
	}
	return sizeOK && chunkOK && shardOK, shardGiven
}

// defaultChunk is the chunk length of dimension i of the given size when
// the manifest names none.
func defaultChunk(i int, size int64) int64 {
	switch {
	case i == 0:
		return 1
	case size >= 512:
		return 256
	default:
		return size
	}
}

// parseDimAxis reads the OME axis fields: unit, scale and downsample.
func parseDimAxis(fields map[string]json.RawMessage, dimPath string, d *Dimension, p *problems) {
	if raw, given := fields["unit"]; given {
		field := dimPath + ".unit"
		if unit, ok := decodeString(raw, field, p); ok {
			if c, bad := hasControl(unit); bad {
				p.add(field, "%s contains the control character %s", quote(unit), c)
			} else if name, msg := normalizeUnit(d.Type, unit); msg != "" {
				p.add(field, "%s", msg)
			} else {
				d.Unit = name
			}
		}
	}

	d.Scale = 1
	if raw, given := fields["scale"]; given {
		field := dimPath + ".scale"
		if scale, text, ok := decodeFloat(raw, field, p); ok {
			if !(scale > 0) || math.IsInf(scale, 0) {
				p.add(field, "%s is not > 0", literal(text))
			} else {
				d.Scale = scale
			}
		}
	}

	if raw, given := fields["downsample"]; given {
		if b, ok := decodeBool(raw, dimPath+".downsample", p); ok {
			d.Downsample = &b
		}
	}
}
