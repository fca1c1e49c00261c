package pipeline

import "encoding/binary"

// LoadUint reads an element of size bytes (1, 2, 4 or 8) at b in order,
// zero-extended: the one place that knows the element widths, for the
// reducer and for tests that build or check raw files.
func LoadUint(order binary.ByteOrder, b []byte, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(order.Uint16(b))
	case 4:
		return uint64(order.Uint32(b))
	}
	return order.Uint64(b)
}

// StoreUint writes the low size bytes of v at b in order.
func StoreUint(order binary.ByteOrder, b []byte, size int, v uint64) {
	switch size {
	case 1:
		b[0] = byte(v)
	case 2:
		order.PutUint16(b, uint16(v))
	case 4:
		order.PutUint32(b, uint32(v))
	default:
		order.PutUint64(b, v)
	}
}
