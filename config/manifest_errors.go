package config

import (
	"fmt"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// FieldError is one violated manifest rule. Field is the path of the
// offending field in the document, in the style "dimensions[2].chunk" or
// "compression.level"; Msg says what is wrong with it and what is allowed.
//
// ParseManifest returns every violation it finds, joined with errors.Join,
// so errors.As finds the first *FieldError and unwrapping the joined error
// lists them all.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// problems collects the violations of one document in the order found.
type problems []error

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
}

// plainKey is a key that can be written after a dot in a field path.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fieldPath is the path of member key inside the object at parent ("" is
// the document itself). Keys that would read ambiguously after a dot are
// written quoted in brackets, so a path never spans lines.
func fieldPath(parent, key string) string {
	switch {
	case !plainKey.MatchString(key):
		return parent + "[" + quote(key) + "]"
	case parent == "":
		return key
	default:
		return parent + "." + key
	}
}

// indexPath is the path of element i of the array at parent.
func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// quote renders user text for a message: quoted, escaped to one line, and
// cut to a readable length.
func quote(s string) string {
	return strconv.Quote(cut(s)) + ellipsisIfCut(s)
}

// literal renders a JSON number or other raw token for a message.
func literal(s string) string {
	return cut(s) + ellipsisIfCut(s)
}

const maxShown = 40 // runes of user text a message shows

func cut(s string) string {
	if utf8.RuneCountInString(s) <= maxShown {
		return s
	}
	n := 0
	for i := range s {
		if n == maxShown {
			return s[:i]
		}
		n++
	}
	return s
}

func ellipsisIfCut(s string) string {
	if utf8.RuneCountInString(s) > maxShown {
		return "…"
	}
	return ""
}
