package config

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/zspool/zspool/zarr"
)

// The OME-NGFF 0.5 side of the manifest: axis types inferred from
// conventional names, units checked against the spec's lists, whether the
// dimensions can be an OME image at all, and the channels' display
// metadata (OME's omero block).

// OME choices: what to write when the dimensions break OME-NGFF's rules.
const (
	OMEAuto  = "auto"  // OME when the dimensions allow it, else a plain Zarr v3 group and a warning
	OMETrue  = "true"  // OME, or refuse the manifest naming the rule
	OMEFalse = "false" // a plain Zarr v3 group
)

// inferDimType is a dimension's type when the manifest gives none: the
// conventional names t, c, z, y and x, anything else other.
func inferDimType(name string) string {
	switch name {
	case "t":
		return "time"
	case "c":
		return "channel"
	case "z", "y", "x":
		return "space"
	}
	return "other"
}

// unitSpellings maps common symbols and spellings to the spec's names.
// Symbols are matched exactly (ms is a millisecond, Ms would be a
// megasecond); longer names also in any case.
var unitSpellings = map[string]string{
	"um": "micrometer", "µm": "micrometer", "μm": "micrometer", "micron": "micrometer", "microns": "micrometer",
	"nm": "nanometer", "mm": "millimeter", "cm": "centimeter", "m": "meter", "km": "kilometer", "pm": "picometer",
	"Å": "angstrom", "ft": "foot", "in": "inch",
	"s": "second", "sec": "second", "secs": "second", "ms": "millisecond", "msec": "millisecond",
	"us": "microsecond", "µs": "microsecond", "μs": "microsecond", "usec": "microsecond",
	"ns": "nanosecond", "ps": "picosecond", "min": "minute", "mins": "minute",
	"h": "hour", "hr": "hour", "hrs": "hour", "d": "day",
}

// normalizeUnit returns the spec's name for unit on an axis of type typ,
// or a message saying why it cannot be used there.
func normalizeUnit(typ, unit string) (string, string) {
	if typ == "other" {
		return unit, "" // a custom axis: the spec constrains only space and time units
	}
	if typ == "channel" {
		return "", "a channel axis has no unit; remove it (or give the dimension another type)"
	}
	want, other, otherType := zarr.SpaceUnits, zarr.TimeUnits, "time"
	if typ == "time" {
		want, other, otherType = zarr.TimeUnits, zarr.SpaceUnits, "space"
	}
	name := canonicalUnit(unit)
	if slices.Contains(want, name) {
		return name, ""
	}
	if slices.Contains(other, name) {
		return "", fmt.Sprintf("%s is a %s unit, but this is a %s axis", quote(unit), otherType, typ)
	}
	msg := fmt.Sprintf("%s is not a %s unit OME-NGFF 0.5 knows", quote(unit), typ)
	if best := nearKey(name, want); best != "" {
		msg += fmt.Sprintf("; did you mean %q?", best)
	} else if typ == "space" {
		msg += ` (e.g. "micrometer", "nanometer", "millimeter")`
	} else {
		msg += ` (e.g. "second", "millisecond", "minute")`
	}
	return "", msg
}

// canonicalUnit turns a known spelling into the spec's name: symbols,
// British -metre, plurals and capitals. Anything else comes back as given.
func canonicalUnit(u string) string {
	if n, ok := unitSpellings[u]; ok {
		return n
	}
	l := strings.ToLower(u)
	if len(l) <= 3 {
		return u // a symbol in the wrong case is not guessed at
	}
	l = strings.ReplaceAll(l, "metre", "meter")
	for _, cand := range []string{l, strings.TrimSuffix(l, "s"), strings.TrimSuffix(l, "es")} {
		if slices.Contains(zarr.SpaceUnits, cand) || slices.Contains(zarr.TimeUnits, cand) {
			return cand
		}
	}
	if n, ok := unitSpellings[l]; ok {
		return n
	}
	return u
}

// OMERule says which OME-NGFF 0.5 axis rule these dimensions break, or ""
// when they can be an OME image.
func OMERule(dims []Dimension) string {
	axes := make([]zarr.Axis, len(dims))
	for i, d := range dims {
		axes[i] = zarr.Axis{Name: d.Name, Type: d.Type}
	}
	return zarr.AxisRule(axes)
}

// WritesOME reports whether the dataset gets OME-NGFF metadata.
func (m *Manifest) WritesOME() bool {
	return m.OME != OMEFalse && OMERule(m.Dimensions) == ""
}

var channelKeys = []string{"label", "color", "window"}

// Channel is one entry of the manifest's channels: how a viewer shows one
// index of the channel dimension (OME's omero channel).
type Channel struct {
	Label  string      `json:"label"`
	Color  string      `json:"color"`            // RRGGBB
	Window *[2]float64 `json:"window,omitempty"` // [start, end]; nil: the dtype's range
}

func parseOMEChoice(top map[string]json.RawMessage, m *Manifest, p *problems) {
	m.OME = OMEAuto
	raw, given := top["ome"]
	if !given {
		return
	}
	var v any
	if err := json.Unmarshal(raw, &v); err == nil {
		switch x := v.(type) {
		case bool:
			m.OME = map[bool]string{true: OMETrue, false: OMEFalse}[x]
			return
		case string:
			if x == OMEAuto || x == OMETrue || x == OMEFalse {
				m.OME = x
				return
			}
		}
	}
	p.add("ome", "%s is not one of \"auto\", true, false", literal(string(raw)))
}

// checkOME applies the ome choice once the dimensions are known.
func checkOME(m *Manifest, p *problems) {
	if m.OME == OMETrue {
		if rule := OMERule(m.Dimensions); rule != "" {
			p.add("ome", "is true, but the dimensions cannot be an OME-NGFF image: %s (set ome to \"auto\" for a plain Zarr v3 group instead)", rule)
		}
	}
}

func parseChannels(top map[string]json.RawMessage, m *Manifest, dimsClean bool, p *problems) {
	raw, given := top["channels"]
	if !given {
		return
	}
	elems, ok := readArray(raw, "channels", p)
	if !ok {
		return
	}
	if !dimsClean {
		return // the dimensions' own problems come first
	}
	ch := -1
	for i, d := range m.Dimensions {
		if d.Type == "channel" {
			ch = i
			break
		}
	}
	switch {
	case ch < 0:
		p.add("channels", "there is no dimension of type channel for them to describe")
		return
	case m.Dimensions[ch].Size > 0 && int64(len(elems)) != m.Dimensions[ch].Size:
		p.add("channels", "has %d entries, but dimension %s has %d channels", len(elems), m.Dimensions[ch].Name, m.Dimensions[ch].Size)
		return
	case m.OME == OMEFalse:
		p.add("channels", "are written as OME omero metadata, which ome: false leaves out; remove them or the ome setting")
		return
	}
	m.Channels = make([]Channel, len(elems))
	for i, elem := range elems {
		path := indexPath("channels", i)
		fields, ok := readObject(elem, path, channelKeys, p)
		if !ok {
			continue
		}
		c := &m.Channels[i]
		c.Label = fmt.Sprintf("%s %d", m.Dimensions[ch].Name, i)
		if raw, given := fields["label"]; given {
			if s, ok := decodeString(raw, path+".label", p); ok {
				c.Label = s
			}
		}
		c.Color = "FFFFFF"
		if raw, given := fields["color"]; given {
			if s, ok := decodeString(raw, path+".color", p); ok {
				s = strings.TrimPrefix(s, "#")
				if len(s) != 6 || strings.Trim(strings.ToUpper(s), "0123456789ABCDEF") != "" {
					p.add(path+".color", "%s is not a colour RRGGBB (six hex digits, e.g. \"00FF00\")", quote(s))
				} else {
					c.Color = strings.ToUpper(s)
				}
			}
		}
		if raw, given := fields["window"]; given {
			parseWindow(raw, path+".window", c, p)
		}
	}
}

func parseWindow(raw json.RawMessage, field string, c *Channel, p *problems) {
	elems, ok := readArray(raw, field, p)
	if !ok {
		return
	}
	if len(elems) != 2 {
		p.add(field, "has %d numbers, want [start, end]", len(elems))
		return
	}
	var w [2]float64
	for k, e := range elems {
		v, _, ok := decodeFloat(e, indexPath(field, k), p)
		if !ok {
			return
		}
		if math.IsInf(v, 0) || math.IsNaN(v) {
			p.add(indexPath(field, k), "is not a finite number")
			return
		}
		w[k] = v
	}
	if w[0] >= w[1] {
		p.add(field, "start %g is not below end %g", w[0], w[1])
		return
	}
	c.Window = &w
}
