package config

// Strict JSON reading for the manifest. encoding/json alone is too lenient
// for a document whose every field is a contract: it matches object keys to
// struct fields case-insensitively, keeps the last of two duplicate keys,
// and names a mistyped field without the index of the array element it
// sits in ("dimensions.size" rather than "dimensions[1].size").
// So objects are read member by member here, with exact keys, every key at
// most once, and every value decoded by a function that knows the field's
// path.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// utf8BOM may open a manifest written by Windows tools; RFC 8259 §8.1 lets
// a parser ignore it, and refusing it would fail an acquisition for nothing.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// isJSONSpace reports the four whitespace bytes of the JSON grammar.
func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func trimJSONSpace(b []byte) []byte {
	for len(b) > 0 && isJSONSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isJSONSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// jsonKind names the JSON type of a raw value the way messages say it.
func jsonKind(raw []byte) string {
	raw = trimJSONSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func isNull(raw []byte) bool { return string(trimJSONSpace(raw)) == "null" }

// readDocument checks that data is exactly one JSON object (surrounded by
// nothing but whitespace) and returns it. Its errors are about the document
// as a whole, so they are plain errors rather than *FieldError; a syntax
// error wraps the *json.SyntaxError.
func readDocument(data []byte) (json.RawMessage, error) {
	skipped := 0
	if bytes.HasPrefix(data, utf8BOM) {
		data, skipped = data[len(utf8BOM):], len(utf8BOM)
	}
	if len(trimJSONSpace(data)) == 0 {
		return nil, errors.New("manifest is empty")
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("manifest is not valid UTF-8 (at byte %d)", skipped+firstInvalidUTF8(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("manifest is not valid JSON (at byte %d): %w", int64(skipped)+max(0, se.Offset-1), err)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("manifest is not valid JSON: it ends inside its value: %w", err)
		default:
			return nil, fmt.Errorf("manifest is not valid JSON: %w", err)
		}
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		for end < int64(len(data)) && isJSONSpace(data[end]) {
			end++
		}
		return nil, fmt.Errorf("manifest has data after its JSON value (at byte %d); it must hold exactly one object", int64(skipped)+end)
	}
	if k := jsonKind(raw); k != "object" {
		return nil, fmt.Errorf("manifest must be a JSON object, got %s", k)
	}
	return raw, nil
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// readObject returns the members of the JSON object raw, which sits at path.
// Every key must be exactly one of known (JSON keys are case-sensitive) and
// appear once; violations are added to p and the offending members dropped.
// ok is false, with a problem added, when raw is not an object.
func readObject(raw json.RawMessage, path string, known []string, p *problems) (members map[string]json.RawMessage, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		p.add(path, "want an object, got %s", jsonKind(raw))
		return nil, false
	}
	members = make(map[string]json.RawMessage, len(known))
	seen := make(map[string]bool, len(known))
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		var value json.RawMessage
		if err == nil && isKey {
			err = dec.Decode(&value)
		}
		if err != nil || !isKey {
			// Unreachable for a document readDocument accepted.
			p.add(path, "malformed object")
			return members, false
		}
		field := fieldPath(path, key)
		switch {
		case seen[key]:
			p.add(field, "appears more than once")
		case !slices.Contains(known, key):
			p.add(field, "unknown field%s", keyHint(key, known))
		default:
			members[key] = value
		}
		seen[key] = true
	}
	return members, true
}

// keyHint points a misspelt key at the field it probably means.
func keyHint(key string, known []string) string {
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return fmt.Sprintf(`; did you mean "%s"? (keys are case-sensitive)`, k)
		}
	}
	return "; known fields: " + strings.Join(known, ", ")
}

// readArray returns the elements of the JSON array raw, which sits at path.
func readArray(raw json.RawMessage, path string, p *problems) ([]json.RawMessage, bool) {
	if k := jsonKind(raw); k != "array" {
		p.add(path, "want an array, got %s", k)
		return nil, false
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		p.add(path, "malformed array") // unreachable for a checked document
		return nil, false
	}
	return elems, true
}

// decodeInt reads an integer. Only integer literals are integers: 2.5 is
// refused rather than truncated, and so, for simplicity and exactness, are
// 2.0 and 2e3. A literal beyond int64 is refused rather than wrapped.
func decodeInt(raw json.RawMessage, field string, p *problems) (int64, bool) {
	if k := jsonKind(raw); k != "number" {
		p.add(field, "want an integer, got %s", k)
		return 0, false
	}
	s := string(trimJSONSpace(raw))
	if strings.ContainsAny(s, ".eE") {
		p.add(field, "want an integer, got %s", literal(s))
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.add(field, "%s does not fit in a 64-bit integer", literal(s))
		return 0, false
	}
	return n, true
}

// decodeFloat reads a finite number; the literal text comes back too so
// messages can quote what was written.
func decodeFloat(raw json.RawMessage, field string, p *problems) (v float64, text string, ok bool) {
	if k := jsonKind(raw); k != "number" {
		p.add(field, "want a number, got %s", k)
		return 0, "", false
	}
	text = string(trimJSONSpace(raw))
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		p.add(field, "%s is not a finite 64-bit float", literal(text))
		return 0, text, false
	}
	return v, text, true
}

func decodeString(raw json.RawMessage, field string, p *problems) (string, bool) {
	if k := jsonKind(raw); k != "string" {
		p.add(field, "want a string, got %s", k)
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.add(field, "malformed string") // unreachable for a checked document
		return "", false
	}
	return s, true
}

func decodeBool(raw json.RawMessage, field string, p *problems) (bool, bool) {
	if k := jsonKind(raw); k != "boolean" {
		p.add(field, "want a boolean, got %s", k)
		return false, false
	}
	return string(trimJSONSpace(raw)) == "true", true
}

// checkKeys walks the JSON value raw at path and reports every key that
// appears twice in one object (encoding/json would silently keep the last),
// and, in the outermost object, every key of reserved.
func checkKeys(raw json.RawMessage, path string, reserved map[string]string, p *problems) {
	type frame struct {
		object  bool
		path    string
		keys    map[string]bool
		key     string // the member whose value comes next
		wantKey bool
		n       int // elements seen, for arrays
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return // io.EOF at the end; anything else cannot happen for a checked document
		}
		if len(stack) > 0 {
			top := stack[len(stack)-1]
			if top.object && top.wantKey {
				if tok == json.Delim('}') {
					stack = stack[:len(stack)-1]
					continue
				}
				key, _ := tok.(string)
				field := fieldPath(top.path, key)
				if top.keys[key] {
					p.add(field, "appears more than once")
				} else if msg, ok := reserved[key]; ok && len(stack) == 1 {
					p.add(field, "%s", msg)
				}
				top.keys[key] = true
				top.key, top.wantKey = key, false
				continue
			}
			if !top.object && tok == json.Delim(']') {
				stack = stack[:len(stack)-1]
				continue
			}
		}
		// tok starts a value: of the document, a member or an element.
		valuePath := path
		if len(stack) > 0 {
			top := stack[len(stack)-1]
			if top.object {
				valuePath = fieldPath(top.path, top.key)
				top.wantKey = true
			} else {
				valuePath = indexPath(top.path, top.n)
				top.n++
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, path: valuePath, keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{path: valuePath})
		}
	}
}
