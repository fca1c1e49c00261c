package config

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// daemonWalk reads a daemon config's YAML node tree into a Daemon field by
// field, collecting every problem with its path and line. It is as strict
// as yaml.v3 with KnownFields(true), and stricter: duplicate keys, null
// settings, merge keys, fractions for integers and "yes" for true are
// refused too, and values of secret-looking keys never reach a message. A
// null section ("retry:" with every setting commented out) is empty.
type daemonWalk struct {
	p     problems
	lines map[string]int  // field path → line of its key, for every field the file gives
	bad   map[string]bool // field paths whose value could not be read; validation skips them
}

func newDaemonWalk() *daemonWalk {
	return &daemonWalk{lines: map[string]int{}, bad: map[string]bool{}}
}

// addAt records a problem with field, at line (0: not in the file).
func (w *daemonWalk) addAt(line int, field, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if line > 0 {
		msg += fmt.Sprintf(" (line %d)", line)
	}
	w.p = append(w.p, &FieldError{Field: field, Msg: msg})
}

// add records a problem with field at the line of its key, if the file
// gives the field.
func (w *daemonWalk) add(field, format string, args ...any) {
	w.addAt(w.lines[field], field, format, args...)
}

// ok reports whether field and every field that holds it were read
// without problems, so that validating it makes sense.
func (w *daemonWalk) ok(field string) bool {
	for p := field; ; {
		if w.bad[p] {
			return false
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return true
		}
		p = p[:i]
	}
}

// yamlField is one struct field as YAML sees it.
type yamlField struct {
	name      string
	index     int
	omitempty bool
	secret    bool // tagged secret:"true": masked by Redacted, never quoted in errors
}

// yamlFields lists the YAML fields of struct type t, as yaml.v3 names them.
func yamlFields(t reflect.Type) []yamlField {
	var out []yamlField
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		out = append(out, yamlField{
			name:      name,
			index:     i,
			omitempty: strings.Contains(","+opts+",", ",omitempty,"),
			secret:    sf.Tag.Get("secret") == "true",
		})
	}
	return out
}

var yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// isSection reports whether values of type t are YAML mappings walked field
// by field (rather than scalars decoded whole).
func isSection(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(yamlUnmarshaler)
}

// mapping reads the mapping n, at path, into the struct v.
func (w *daemonWalk) mapping(n *yaml.Node, v reflect.Value, path string) {
	n = resolveAlias(n)
	fields := yamlFields(v.Type())
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	if n.Kind != yaml.MappingNode {
		w.addAt(n.Line, path, "want a mapping of %s; got %s", strings.Join(names, ", "), describeNode(n, false))
		w.bad[path] = true
		return
	}
	where := path
	if where == "" {
		where = "(top level)"
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := resolveAlias(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			w.addAt(k.Line, where, "a key must be a plain string; got %s", describeNode(k, false))
			continue
		}
		if k.ShortTag() == "!!merge" {
			w.addAt(k.Line, where, "merge keys (<<) are not supported; write the settings out")
			continue
		}
		key := k.Value
		field := fieldPath(path, key)
		if first, dup := seen[key]; dup {
			w.addAt(0, field, "appears on lines %d and %d; give it once", first, k.Line)
			w.bad[field] = true
			continue
		}
		seen[key] = k.Line
		fi := -1
		for j, f := range fields {
			if f.name == key {
				fi = j
			}
		}
		if fi < 0 {
			w.unknown(k, val, path, names)
			continue
		}
		w.lines[field] = k.Line
		w.value(val, v.Field(fields[fi].index), field, fields[fi].secret)
	}
}

// value reads n into the field fv at path.
func (w *daemonWalk) value(n *yaml.Node, fv reflect.Value, path string, secret bool) {
	n = resolveAlias(n)
	if isNullNode(n) && isSection(fv.Type()) {
		return // a section whose settings are all commented out
	}
	if isNullNode(n) {
		w.addAt(n.Line, path, "has no value; give one, or remove the key to take the default")
		w.bad[path] = true
		return
	}
	if isSection(fv.Type()) {
		w.mapping(n, fv, path)
		return
	}
	if err := decodeLeaf(n, fv, secret); err != nil {
		w.addAt(n.Line, path, "%s", err)
		w.bad[path] = true
	}
}

// decodeLeaf decodes the scalar n into fv, as yaml.v3 would but stricter
// about types. With secret set the message describes n without its value.
func decodeLeaf(n *yaml.Node, fv reflect.Value, secret bool) error {
	ptr := fv.Addr().Interface()
	if _, ok := ptr.(yaml.Unmarshaler); ok {
		err := n.Decode(ptr)
		if err != nil && secret {
			return fmt.Errorf("cannot read %s here", describeNode(n, true))
		}
		return err
	}
	var want, tag string
	switch fv.Kind() {
	case reflect.String:
		want = "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		want, tag = "an integer", "!!int"
	case reflect.Bool:
		want, tag = "true or false", "!!bool"
	default:
		panic(fmt.Sprintf("config: no YAML reading for %s", fv.Type())) // a field type this file does not handle
	}
	if n.Kind != yaml.ScalarNode || (tag != "" && n.ShortTag() != tag) {
		return fmt.Errorf("want %s; got %s", want, describeNode(n, secret))
	}
	if err := n.Decode(ptr); err != nil {
		if tag == "!!int" {
			return fmt.Errorf("%s does not fit in a %d-bit integer", describeNode(n, secret), fv.Type().Bits())
		}
		return fmt.Errorf("want %s; got %s", want, describeNode(n, secret))
	}
	return nil
}

// unknown reports the unknown key k of the mapping at path, with its value
// val; known are the keys that mapping takes.
func (w *daemonWalk) unknown(k, val *yaml.Node, path string, known []string) {
	field := fieldPath(path, k.Value)
	w.bad[field] = true
	switch elsewhere := fieldsNamed(k.Value, path); {
	case isSecretKey(k.Value):
		w.addAt(k.Line, field, "%s", secretMsg)
		return
	case len(elsewhere) > 0:
		places := make([]string, len(elsewhere))
		for i, p := range elsewhere {
			if j := strings.LastIndexByte(p, '.'); j >= 0 {
				places[i] = "under " + p[:j]
			} else {
				places[i] = "at the top level"
			}
		}
		w.addAt(k.Line, field, "unknown field here; it belongs %s", strings.Join(places, " or "))
	default:
		if hint := nearKey(k.Value, known); hint != "" {
			w.addAt(k.Line, field, "unknown field; did you mean %q?", hint)
		} else {
			w.addAt(k.Line, field, "unknown field; known fields: %s", strings.Join(known, ", "))
		}
	}
	w.findSecrets(val, field, 0)
}

// fieldsNamed lists the paths of the Daemon fields called key, other than
// the one inside the mapping at path: where a misplaced key belongs.
func fieldsNamed(key, path string) []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for _, f := range yamlFields(t) {
			p := fieldPath(prefix, f.name)
			if f.name == key && prefix != path {
				out = append(out, p)
			}
			if ft := t.Field(f.index).Type; isSection(ft) {
				walk(ft, p)
			}
		}
	}
	walk(reflect.TypeFor[Daemon](), "")
	return out
}

const secretMsg = "secrets do not belong in the config file; use the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or credentials_file"

// findSecrets reports every secret-looking key inside n, the value of an
// unknown key, so that a block such as "s3: {secret_key: …}" gets the
// message that says where secrets go. Aliases are not followed: the node
// they name was defined, and searched, elsewhere.
func (w *daemonWalk) findSecrets(n *yaml.Node, path string, depth int) {
	if depth > 64 {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				continue
			}
			field := fieldPath(path, k.Value)
			if isSecretKey(k.Value) {
				w.addAt(k.Line, field, "%s", secretMsg)
				continue
			}
			w.findSecrets(v, field, depth+1)
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			w.findSecrets(v, indexPath(path, i), depth+1)
		}
	}
}

// isSecretKey reports whether an (unknown) key names a credential.
func isSecretKey(key string) bool {
	k := normalKey(key)
	for _, word := range []string{"secret", "password", "passwd", "passphrase", "token", "accesskey", "privatekey", "apikey", "sessionkey"} {
		if strings.Contains(k, word) {
			return true
		}
	}
	switch k {
	case "key", "keyid", "credentials", "credential", "auth", "authorization":
		return true
	}
	return false
}

// normalKey folds case and drops separators, so that "Secret-Key",
// "secret_key" and "secretKey" compare equal.
func normalKey(key string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(key))
}

// nearKey is the known key that key probably misspells, or "".
func nearKey(key string, known []string) string {
	nk := normalKey(key)
	for _, k := range known {
		if normalKey(k) == nk {
			return k
		}
	}
	best, bestDist := "", 3
	if len(nk) < 4 {
		bestDist = 2
	}
	for _, k := range known {
		if d := editDistance(nk, normalKey(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// resolveAlias follows an alias to the node it names.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNullNode(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describeNode renders a YAML value for a message: scalars quoted and cut
// short, collections by kind. With secret set a scalar is described by its
// type alone.
func describeNode(n *yaml.Node, secret bool) string {
	n = resolveAlias(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
	default:
		return "nothing"
	}
	tag := n.ShortTag()
	if tag == "!!null" {
		return "null"
	}
	if secret {
		switch tag {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		}
		return "a " + strings.TrimPrefix(tag, "!!") + " value"
	}
	switch tag {
	case "!!str":
		return quote(n.Value)
	case "!!int", "!!float", "!!bool":
		return literal(n.Value)
	}
	return tag + " " + quote(n.Value)
}
