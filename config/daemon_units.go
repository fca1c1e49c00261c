package config

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Size is a byte count. In YAML it is an integer number of bytes or a
// string of a number and a unit: "512MiB", "16 MiB", "2GiB", "1.5GB".
// Units are B, kB, MB, GB, TB (powers of 1000) and KiB, MiB, GiB, TiB
// (powers of 1024), in any letter case; a fraction is allowed when the
// result is a whole number of bytes. It is written back as the largest
// unit that divides it exactly ("768 MiB", "1500 MB", "12345 B").
type Size int64

// Binary and decimal size units.
const (
	KiB Size = 1 << 10
	MiB Size = 1 << 20
	GiB Size = 1 << 30
	TiB Size = 1 << 40
	KB  Size = 1e3
	MB  Size = 1e6
	GB  Size = 1e9
	TB  Size = 1e12
)

// sizeUnits is every unit, largest first, as String prefers them.
var sizeUnits = []struct {
	name string
	n    Size
}{
	{"TiB", TiB}, {"TB", TB}, {"GiB", GiB}, {"GB", GB},
	{"MiB", MiB}, {"MB", MB}, {"KiB", KiB}, {"kB", KB}, {"B", 1},
}

const sizeWant = `want a byte count or a number with a unit (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB), like "768MiB"`

// String renders s in the largest unit that divides it exactly, e.g.
// "16 MiB"; ParseSize reads every result back to s.
func (s Size) String() string {
	if s < 0 {
		if s == math.MinInt64 {
			return strconv.FormatInt(int64(s), 10) + " B"
		}
		return "-" + (-s).String()
	}
	if s == 0 {
		return "0 B"
	}
	for _, u := range sizeUnits {
		if s%u.n == 0 {
			return strconv.FormatInt(int64(s/u.n), 10) + " " + u.name
		}
	}
	panic("unreachable: every size is a whole number of bytes")
}

// Set reads a size as ParseSize does, so that a command-line flag can bind
// to a Size field of the config.
func (s *Size) Set(text string) error {
	v, err := ParseSize(text)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Type names the flag's value in help.
func (s *Size) Type() string { return "size" }

// MarshalYAML writes s as String does.
func (s Size) MarshalYAML() (any, error) { return s.String(), nil }

// UnmarshalYAML reads an integer number of bytes or a size string.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%s, got %s", sizeWant, describeNode(n, false))
	}
	switch n.ShortTag() {
	case "!!int":
		var v int64
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("%s does not fit in a 64-bit byte count", literal(n.Value))
		}
		if v < 0 {
			return fmt.Errorf("%s is negative; %s", literal(n.Value), sizeWant)
		}
		*s = Size(v)
		return nil
	case "!!str", "!!float":
		v, err := ParseSize(n.Value)
		if err != nil {
			return err
		}
		*s = v
		return nil
	}
	return fmt.Errorf("%s, got %s", sizeWant, describeNode(n, false))
}

// ParseSize reads a size string such as "512MiB", "16 MiB", "1.5GB" or
// "4096" (bytes).
func ParseSize(text string) (Size, error) {
	str := strings.TrimSpace(text)
	num := str
	unit := ""
	if i := strings.IndexFunc(str, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }); i >= 0 {
		num, unit = str[:i], strings.TrimSpace(str[i:])
	}
	whole, frac, hasDot := strings.Cut(num, ".")
	if whole == "" || !allDigits(whole) || (hasDot && (frac == "" || !allDigits(frac))) {
		if strings.HasPrefix(str, "-") {
			return 0, fmt.Errorf("%s is negative; %s", quote(text), sizeWant)
		}
		return 0, fmt.Errorf("%s is not a size: %s", quote(text), sizeWant)
	}
	mult := Size(-1)
	if unit == "" {
		mult = 1
	}
	for _, u := range sizeUnits {
		if strings.EqualFold(unit, u.name) {
			mult = u.n
		}
	}
	if mult < 0 {
		return 0, fmt.Errorf("%s is not a size: unknown unit %s; %s", quote(text), quote(unit), sizeWant)
	}
	// value = whole.frac × mult, exactly.
	v, ok := new(big.Int).SetString(whole+frac, 10)
	if !ok {
		return 0, fmt.Errorf("%s is not a size: %s", quote(text), sizeWant) // unreachable: digits only
	}
	v.Mul(v, big.NewInt(int64(mult)))
	q, r := new(big.Int).QuoRem(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil), new(big.Int))
	if r.Sign() != 0 {
		return 0, fmt.Errorf("%s is not a whole number of bytes", quote(text))
	}
	if !q.IsInt64() {
		return 0, fmt.Errorf("%s does not fit in a 64-bit byte count", quote(text))
	}
	return Size(q.Int64()), nil
}

func allDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Duration is a time.Duration that YAML writes as a Go duration string:
// "30s", "5m", "1h30m", "250ms". A bare number is refused, in YAML or in a
// string: its unit would be a guess.
type Duration time.Duration

const durationWant = `want a number with a unit (ns, us, ms, s, m, h), like "30s", "5m" or "1h30m"`

// String renders d as time.Duration does, without trailing zero units:
// "24h" rather than "24h0m0s", "5m" rather than "5m0s".
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// MarshalYAML writes d as String does.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%s, got %s", durationWant, describeNode(n, false))
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		return fmt.Errorf("%s is a bare number, whose unit would be a guess; %s", literal(n.Value), durationWant)
	case "!!str":
		v, err := ParseDuration(n.Value)
		if err != nil {
			return err
		}
		*d = v
		return nil
	}
	return fmt.Errorf("%s, got %s", durationWant, describeNode(n, false))
}

// ParseDuration reads a Go duration string, refusing a bare number.
func ParseDuration(text string) (Duration, error) {
	s := strings.TrimSpace(text)
	if strings.ContainsAny(s, "0123456789") && !strings.ContainsFunc(s, unicode.IsLetter) {
		return 0, fmt.Errorf("%s is a bare number, whose unit would be a guess; %s", quote(text), durationWant)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s is not a duration: %s", quote(text), durationWant)
	}
	return Duration(v), nil
}
