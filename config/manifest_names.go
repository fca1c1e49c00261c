package config

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Name rules of MANIFEST.md, as regular expressions; the functions below
// turn a mismatch into a message that says which character or length is
// wrong.
var (
	datasetNameRE   = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)
	dimensionNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

const maxDatasetName = 128

// datasetNameProblem says why s is not a valid dataset name, or "" if it is.
// The name becomes the directory <prefix>/<name>.ome.zarr/.
func datasetNameProblem(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case s == "." || s == "..":
		return fmt.Sprintf("%q is not allowed", s)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return !isDatasetNameRune(r) }); i >= 0 {
		return fmt.Sprintf("%s contains %s; allowed are A-Z a-z 0-9 . _ -", quote(s), runeAt(s, i))
	}
	if len(s) > maxDatasetName {
		return fmt.Sprintf("%d characters long, at most %d", len(s), maxDatasetName)
	}
	if !datasetNameRE.MatchString(s) {
		return "must match [A-Za-z0-9._-]{1,128}" // unreachable: the checks above are the same rule
	}
	return ""
}

func isDatasetNameRune(r rune) bool {
	return r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
}

// dimensionNameProblem says why s is not a valid dimension name, or "".
func dimensionNameProblem(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case dimensionNameRE.MatchString(s):
		return ""
	case s[0] < 'a' || s[0] > 'z':
		return fmt.Sprintf("%s must start with a lowercase letter a-z", quote(s))
	}
	i := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	})
	return fmt.Sprintf("%s contains %s; allowed are a-z 0-9 _", quote(s), runeAt(s, i))
}

// dataFileProblem says why s cannot name the raw file, or "". The raw file
// must sit in the manifest's own directory, so s must be a plain file name;
// whether it is a symlink is checked when the file is opened.
func dataFileProblem(s string) string {
	control, hasCtl := hasControl(s)
	switch {
	case s == "":
		return "must not be empty"
	case s == "." || s == "..":
		return fmt.Sprintf("%q is not a file name", s)
	case strings.ContainsAny(s, `/\`):
		if hasDotDotComponent(s) {
			return fmt.Sprintf("%s climbs out of the spool directory with \"..\"; want a plain file name beside the manifest", quote(s))
		}
		return fmt.Sprintf("%s contains a path separator; want a plain file name beside the manifest", quote(s))
	case hasCtl:
		// NUL truncates names at the system call; the other control
		// characters make names that logs and shells mangle.
		return fmt.Sprintf("%s contains the control character %s", quote(s), control)
	case strings.HasPrefix(s, "."):
		return fmt.Sprintf("%s starts with '.': such files are never picked up from the spool", quote(s))
	case strings.HasSuffix(s, ".json"):
		return fmt.Sprintf("%s ends in .json, which the spool takes for a manifest", quote(s))
	case strings.HasSuffix(s, ".tmp") || strings.HasSuffix(s, ".part"):
		return fmt.Sprintf("%s ends in .tmp or .part, which marks a file still being written", quote(s))
	}
	return ""
}

func hasDotDotComponent(s string) bool {
	for _, c := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }) {
		if c == ".." {
			return true
		}
	}
	return false
}

// runeAt quotes the character that starts at byte i of s.
func runeAt(s string, i int) string {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return fmt.Sprintf("%q", r)
}

// hasControl reports whether s holds a control character (C0, DEL or C1).
func hasControl(s string) (string, bool) {
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return runeAt(s, i), true
	}
	return "", false
}
