package zarr

import "math"

// DType is a Zarr v3 numeric data type name, as a manifest's dtype and an
// array document's data_type give it.
type DType string

// Size is the element size in bytes, or 0 for an unknown type.
func (t DType) Size() int {
	switch t {
	case "uint8", "int8":
		return 1
	case "uint16", "int16":
		return 2
	case "uint32", "int32", "float32":
		return 4
	case "uint64", "int64", "float64":
		return 8
	}
	return 0
}

// IsFloat reports whether the type is an IEEE-754 float.
func (t DType) IsFloat() bool { return t == "float32" || t == "float64" }

// IsSigned reports whether the type is a signed integer.
func (t DType) IsSigned() bool {
	return t == "int8" || t == "int16" || t == "int32" || t == "int64"
}

// Range is the span of values the type holds, as a display window's
// default: the integer types' full range; for floats, which have no
// useful one, 0 to 1.
func (t DType) Range() (lo, hi float64) {
	switch t {
	case "uint8":
		return 0, math.MaxUint8
	case "int8":
		return math.MinInt8, math.MaxInt8
	case "uint16":
		return 0, math.MaxUint16
	case "int16":
		return math.MinInt16, math.MaxInt16
	case "uint32":
		return 0, math.MaxUint32
	case "int32":
		return math.MinInt32, math.MaxInt32
	case "uint64":
		return 0, math.MaxUint64
	case "int64":
		return math.MinInt64, math.MaxInt64
	}
	return 0, 1
}
