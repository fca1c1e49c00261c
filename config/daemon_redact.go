package config

import (
	"bytes"
	"fmt"
	"net/url"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// redactedValue replaces the value of a secret:"true" field that is set.
const redactedValue = "<redacted>"

// Redacted renders the effective configuration (every default filled in)
// as YAML, for `zspool config check` to print. The file holds no secrets
// today; a field tagged secret:"true" would be shown as <redacted> when
// set. ParseDaemon reads the result back to the same configuration.
func (d *Daemon) Redacted() string {
	var b bytes.Buffer
	b.WriteString("# zspool effective configuration: defaults filled in, secrets masked\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(redactedNode(reflect.ValueOf(*d))); err != nil {
		// Unreachable: every value is a string, number, bool or section.
		fmt.Fprintf(&b, "# cannot render: %v\n", err)
	}
	enc.Close()
	return b.String()
}

// MarshalYAML renders d as Redacted does, so that no way of writing a
// Daemon as YAML shows a secret.
func (d Daemon) MarshalYAML() (any, error) {
	return redactedNode(reflect.ValueOf(d)), nil
}

// redactedNode is the YAML mapping of the struct v, field by field in
// declaration order, with sections as nested mappings, omitempty honoured
// and set secret:"true" fields masked.
func redactedNode(v reflect.Value) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, f := range yamlFields(v.Type()) {
		fv := v.Field(f.index)
		if f.omitempty && fv.IsZero() {
			continue
		}
		key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: f.name}
		var val *yaml.Node
		switch {
		case f.secret && !fv.IsZero():
			val = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: redactSecret(fv)}
		case isSection(fv.Type()):
			val = redactedNode(fv)
		default:
			val = new(yaml.Node)
			if err := val.Encode(fv.Interface()); err != nil {
				val = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fmt.Sprintf("<cannot render: %v>", err)}
			}
		}
		n.Content = append(n.Content, key, val)
	}
	return n
}

// redactSecret is what a set secret field shows: a URL keeps its scheme
// and host (so the reader sees where it points, and the text still reads
// back as a URL), the rest is masked.
func redactSecret(fv reflect.Value) string {
	if fv.Kind() == reflect.String {
		if u, err := url.Parse(fv.String()); err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https") {
			return u.Scheme + "://" + u.Host + "/" + redactedURLPath
		}
	}
	return redactedValue
}

// redactedURLPath replaces the path and query of a secret URL.
const redactedURLPath = "REDACTED"
