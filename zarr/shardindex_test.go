package zarr_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"github.com/zspool/zspool/zarr"
)

var absent = zarr.Entry{Offset: zarr.Absent, NBytes: zarr.Absent}

func TestIndexSizeIsSixteenBytesPerSlotPlusTheCrc(t *testing.T) {
	for _, tc := range []struct{ slots, want int64 }{{0, 4}, {1, 20}, {8, 132}, {64, 1028}} {
		if got := zarr.IndexSize(tc.slots); got != tc.want {
			t.Errorf("IndexSize(%d) = %d, want %d", tc.slots, got, tc.want)
		}
	}
}

func TestAppendIndexWritesLittleEndianPairsThenTheirCrc32c(t *testing.T) {
	entries := []zarr.Entry{{Offset: 0, NBytes: 10}, absent, {Offset: 10, NBytes: 0x0102030405}}
	prefix := []byte("chunk bytes")
	b := zarr.AppendIndex(slices.Clone(prefix), entries)
	if string(b[:len(prefix)]) != string(prefix) {
		t.Fatal("AppendIndex changed the bytes before the index")
	}
	idx := b[len(prefix):]
	if int64(len(idx)) != zarr.IndexSize(int64(len(entries))) {
		t.Fatalf("index of %d bytes, want %d", len(idx), zarr.IndexSize(int64(len(entries))))
	}
	for i, e := range entries {
		if off, n := binary.LittleEndian.Uint64(idx[16*i:]), binary.LittleEndian.Uint64(idx[16*i+8:]); off != e.Offset || n != e.NBytes {
			t.Errorf("slot %d encodes (%d, %d), want (%d, %d)", i, off, n, e.Offset, e.NBytes)
		}
	}
	body := idx[:len(idx)-4]
	want := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))
	if got := binary.LittleEndian.Uint32(idx[len(idx)-4:]); got != want {
		t.Fatalf("stored crc %#08x, want crc32c %#08x", got, want)
	}
}

func TestDecodeIndexRoundTripsWhatAppendIndexWrote(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []zarr.Entry
		data    int64 // chunk bytes before the index
	}{
		{"every slot present", []zarr.Entry{{0, 5}, {5, 7}, {12, 1}, {13, 3}}, 16},
		{"every slot absent", []zarr.Entry{absent, absent, absent}, 0},
		{"absent slots between present ones", []zarr.Entry{{0, 4}, absent, {4, 4}, absent}, 8},
		{"chunks out of order", []zarr.Entry{{6, 2}, {0, 6}}, 8},
		{"a chunk ending exactly at the index", []zarr.Entry{{0, 3}, {3, 5}}, 8},
		{"a zero-length chunk at the data end", []zarr.Entry{{8, 0}}, 8},
		{"one slot", []zarr.Entry{{0, 100}}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slots := int64(len(tc.entries))
			b := zarr.AppendIndex(nil, tc.entries)
			got, err := zarr.DecodeIndex(b, slots, tc.data+zarr.IndexSize(slots))
			if err != nil {
				t.Fatalf("DecodeIndex: %v", err)
			}
			if !slices.Equal(got, tc.entries) {
				t.Fatalf("decoded %v, want %v", got, tc.entries)
			}
			for i, e := range got {
				if e.Present() != (e != absent) {
					t.Errorf("slot %d %v: Present = %v", i, e, e.Present())
				}
			}
		})
	}
}

func TestDecodeIndexFailsWithErrIndexChecksumOnAnyFlippedBit(t *testing.T) {
	entries := []zarr.Entry{{0, 5}, absent, {5, 11}}
	slots := int64(len(entries))
	good := zarr.AppendIndex(nil, entries)
	for bit := range len(good) * 8 {
		b := slices.Clone(good)
		b[bit/8] ^= 1 << (bit % 8)
		_, err := zarr.DecodeIndex(b, slots, 1<<40)
		if !errors.Is(err, zarr.ErrIndexChecksum) {
			where := "index"
			if bit/8 >= len(good)-4 {
				where = "crc"
			}
			t.Fatalf("bit %d (in the %s) flipped: err %v, want ErrIndexChecksum", bit, where, err)
		}
	}
}

func TestDecodeIndexRejectsEntriesOutsideTheDataRegion(t *testing.T) {
	const data = 20 // bytes of chunks before the index
	for _, tc := range []struct {
		name  string
		entry zarr.Entry
	}{
		{"offset past the data", zarr.Entry{Offset: 21, NBytes: 0}},
		{"chunk running into the index", zarr.Entry{Offset: 15, NBytes: 6}},
		{"length past the data", zarr.Entry{Offset: 0, NBytes: 21}},
		{"offset+nbytes overflowing", zarr.Entry{Offset: 10, NBytes: ^uint64(0) - 5}},
		{"half absent: offset only", zarr.Entry{Offset: zarr.Absent, NBytes: 4}},
		{"half absent: nbytes only", zarr.Entry{Offset: 0, NBytes: zarr.Absent}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries := []zarr.Entry{{0, 4}, tc.entry}
			b := zarr.AppendIndex(nil, entries)
			_, err := zarr.DecodeIndex(b, 2, data+zarr.IndexSize(2))
			if err == nil {
				t.Fatalf("entry %+v accepted", tc.entry)
			}
			if errors.Is(err, zarr.ErrIndexChecksum) || !strings.Contains(err.Error(), "slot 1") {
				t.Fatalf("err %v; want an error naming slot 1", err)
			}
		})
	}
}

func TestDecodeIndexRejectsAnObjectTooShortForItsIndex(t *testing.T) {
	// An object smaller than the index cannot hold any chunk; the data
	// region must not wrap around to "everything fits".
	b := zarr.AppendIndex(nil, []zarr.Entry{{0, 1}, absent})
	for _, size := range []int64{0, zarr.IndexSize(2) - 1} {
		if _, err := zarr.DecodeIndex(b, 2, size); err == nil {
			t.Errorf("object of %d bytes with a %d-byte index accepted", size, zarr.IndexSize(2))
		}
	}
	// An empty data region is fine when every slot is absent.
	b = zarr.AppendIndex(nil, []zarr.Entry{absent, absent})
	if _, err := zarr.DecodeIndex(b, 2, zarr.IndexSize(2)); err != nil {
		t.Errorf("all-absent index over no data: %v", err)
	}
}

func TestDecodeIndexRejectsTheWrongLength(t *testing.T) {
	b := zarr.AppendIndex(nil, []zarr.Entry{{0, 1}, absent, absent})
	for _, tc := range []struct {
		name  string
		b     []byte
		slots int64
	}{
		{"one byte short", b[:len(b)-1], 3},
		{"one byte long", append(slices.Clone(b), 0), 3},
		{"fewer slots than encoded", b, 2},
		{"more slots than encoded", b, 4},
		{"empty", nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := zarr.DecodeIndex(tc.b, tc.slots, 1<<20); err == nil || errors.Is(err, zarr.ErrIndexChecksum) {
				t.Fatalf("err %v; want a length error", err)
			}
		})
	}
}
