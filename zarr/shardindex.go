package zarr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Absent marks an index slot whose chunk was never written (outside the
// array, or equal to fill everywhere): offset = nbytes = 2^64−1.
const Absent = ^uint64(0)

// IndexEntrySize is one (offset, nbytes) pair.
const IndexEntrySize = 16

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// IndexSize is the byte size of a shard index with n slots, crc included.
func IndexSize(slots int64) int64 { return slots*IndexEntrySize + 4 }

// Entry is one chunk's place inside a shard object.
type Entry struct {
	Offset, NBytes uint64
}

// Present reports whether the slot holds a chunk.
func (e Entry) Present() bool { return !(e.Offset == Absent && e.NBytes == Absent) }

// AppendIndex encodes entries as the shard index (u64 LE pairs) followed by
// its crc32c (u32 LE).
func AppendIndex(dst []byte, entries []Entry) []byte {
	start := len(dst)
	for _, e := range entries {
		dst = binary.LittleEndian.AppendUint64(dst, e.Offset)
		dst = binary.LittleEndian.AppendUint64(dst, e.NBytes)
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// ErrIndexChecksum reports a shard index whose crc32c does not match.
var ErrIndexChecksum = errors.New("shard index crc32c mismatch")

// DecodeIndex parses a shard index of slots entries from b (exactly
// IndexSize(slots) bytes) and checks its crc32c and that every present
// chunk lies inside a shard of objectSize bytes before the index.
func DecodeIndex(b []byte, slots int64, objectSize int64) ([]Entry, error) {
	if int64(len(b)) != IndexSize(slots) {
		return nil, fmt.Errorf("shard index: %d bytes, want %d", len(b), IndexSize(slots))
	}
	body := b[:len(b)-4]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(b[len(b)-4:]); got != want {
		return nil, fmt.Errorf("%w: computed %08x, stored %08x", ErrIndexChecksum, got, want)
	}
	if objectSize < IndexSize(slots) {
		// Without this the data region's size wraps around to ~2^64 and
		// every entry "fits".
		return nil, fmt.Errorf("shard index: object of %d bytes is shorter than its %d-byte index", objectSize, IndexSize(slots))
	}
	dataEnd := uint64(objectSize - IndexSize(slots))
	entries := make([]Entry, slots)
	for i := range entries {
		e := Entry{
			Offset: binary.LittleEndian.Uint64(body[i*16:]),
			NBytes: binary.LittleEndian.Uint64(body[i*16+8:]),
		}
		if e.Present() {
			if e.Offset == Absent || e.NBytes == Absent || e.Offset > dataEnd || e.NBytes > dataEnd-e.Offset {
				return nil, fmt.Errorf("shard index slot %d: chunk [%d, +%d) outside the %d data bytes", i, e.Offset, e.NBytes, dataEnd)
			}
		}
		entries[i] = e
	}
	return entries, nil
}
