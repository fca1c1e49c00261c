package zarr

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// The OME-NGFF 0.5 rules an image's metadata must follow: the official
// JSON schemas (embedded from ngff/), and the spec's rules the schemas do
// not express (axis order, units, transform lengths).

// SpaceUnits and TimeUnits are the units OME-NGFF 0.5 lists for space and
// time axes (UDUNITS-2 names).
var (
	SpaceUnits = []string{"angstrom", "attometer", "centimeter", "decimeter", "exameter", "femtometer", "foot",
		"gigameter", "hectometer", "inch", "kilometer", "megameter", "meter", "micrometer", "mile", "millimeter",
		"nanometer", "parsec", "petameter", "picometer", "terameter", "yard", "yoctometer", "yottameter",
		"zeptometer", "zettameter"}
	TimeUnits = []string{"attosecond", "centisecond", "day", "decisecond", "exasecond", "femtosecond",
		"gigasecond", "hectosecond", "hour", "kilosecond", "megasecond", "microsecond", "millisecond", "minute",
		"nanosecond", "petasecond", "picosecond", "second", "terasecond", "yoctosecond", "yottasecond",
		"zeptosecond", "zettasecond"}
)

// AxisRule says which OME-NGFF 0.5 axis rule the axes break, or "" when
// they can be an image: 2 to 5 axes, an optional time axis first, then an
// optional channel or custom axis, then 2 or 3 space axes.
func AxisRule(axes []Axis) string {
	describe := func() string {
		parts := make([]string, len(axes))
		for i, a := range axes {
			parts[i] = a.Name + " (" + a.Type + ")"
		}
		return "; these are " + strings.Join(parts, ", ")
	}
	const rule = "OME-NGFF 0.5 wants an optional time axis first, then an optional channel or custom axis, then 2–3 space axes"
	if n := len(axes); n < 2 || n > 5 {
		return fmt.Sprintf("OME-NGFF 0.5 allows 2 to 5 axes, not %d%s", n, describe())
	}
	i := 0
	if axes[0].Type == "time" {
		i++
	}
	if i < len(axes) && axes[i].Type != "space" && axes[i].Type != "time" {
		i++
	}
	spaces := 0
	for ; i < len(axes); i++ {
		if axes[i].Type != "space" {
			return fmt.Sprintf("%s; %s is out of place%s", rule, axes[i].Name, describe())
		}
		spaces++
	}
	if spaces < 2 || spaces > 3 {
		return fmt.Sprintf("%s; there are %d space axes%s", rule, spaces, describe())
	}
	return ""
}

// UnitRule says what is wrong with an axis's unit, or "".
func UnitRule(a Axis) string {
	switch {
	case a.Unit == "":
		return ""
	case a.Type == "space" && !slices.Contains(SpaceUnits, a.Unit):
		return fmt.Sprintf("axis %s: unit %q is not one of OME-NGFF 0.5's space units", a.Name, a.Unit)
	case a.Type == "time" && !slices.Contains(TimeUnits, a.Unit):
		return fmt.Sprintf("axis %s: unit %q is not one of OME-NGFF 0.5's time units", a.Name, a.Unit)
	case a.Type == "channel":
		return fmt.Sprintf("axis %s: a channel axis has no unit, found %q", a.Name, a.Unit)
	}
	return ""
}

//go:embed ngff/*.schema
var ngffSchemas embed.FS

const ngffSchemaBase = "https://ngff.openmicroscopy.org/0.5/schemas/"

// strictImage compiles strict_image.schema, its $refs resolved among the
// embedded schemas (never over the network). A few milliseconds, once per
// dataset checked: not worth a package-level cache.
func strictImage() (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	entries, err := ngffSchemas.ReadDir("ngff")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".schema") {
			continue
		}
		b, err := ngffSchemas.ReadFile("ngff/" + e.Name())
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("ngff/%s: %w", e.Name(), err)
		}
		if err := c.AddResource(ngffSchemaBase+e.Name(), doc); err != nil {
			return nil, err
		}
	}
	return c.Compile(ngffSchemaBase + "strict_image.schema")
}

// CheckOMEAttributes holds a group's attributes to OME-NGFF 0.5's
// strict_image.schema and to the spec's rules the schema leaves out, and
// names the first rule broken.
func CheckOMEAttributes(attrs map[string]json.RawMessage) error {
	sch, err := strictImage()
	if err != nil {
		return fmt.Errorf("OME-NGFF schemas: %w", err)
	}
	raw, err := json.Marshal(attrs)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("attributes break OME-NGFF 0.5 (strict_image.schema): %s", schemaMessage(err))
	}
	var ome OME
	if err := json.Unmarshal(attrs["ome"], &ome); err != nil {
		return fmt.Errorf("attributes.ome: %w", err)
	}
	for mi, ms := range ome.Multiscales {
		if rule := AxisRule(ms.Axes); rule != "" {
			return fmt.Errorf("multiscales[%d].axes: %s", mi, rule)
		}
		for _, a := range ms.Axes {
			if rule := UnitRule(a); rule != "" {
				return fmt.Errorf("multiscales[%d].axes: %s", mi, rule)
			}
		}
		for di, d := range ms.Datasets {
			for _, t := range d.CoordinateTransformations {
				n := len(t.Scale) + len(t.Translation)
				if n != len(ms.Axes) {
					return fmt.Errorf("multiscales[%d].datasets[%d] (path %q): a %s of %d values for %d axes", mi, di, d.Path, t.Type, n, len(ms.Axes))
				}
			}
			if ts := d.CoordinateTransformations; len(ts) == 0 || ts[0].Type != "scale" || len(ts) > 2 || len(ts) == 2 && ts[1].Type != "translation" {
				return fmt.Errorf("multiscales[%d].datasets[%d] (path %q): want a scale, optionally followed by a translation", mi, di, d.Path)
			}
		}
	}
	return nil
}

// schemaMessage is a validation error in a line or a few: where in the
// document, and what rule.
func schemaMessage(err error) string {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err.Error()
	}
	printer := message.NewPrinter(language.English)
	var leaves []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			leaves = append(leaves, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(leaves) > 4 {
		leaves = append(leaves[:4], fmt.Sprintf("and %d more", len(leaves)-4))
	}
	return strings.Join(leaves, "; ")
}
