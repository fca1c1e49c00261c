package s3sink

import (
	"hash/crc64"
	"testing"
)

func TestCRC64NVMEMatchesTheCatalogueCheckValue(t *testing.T) {
	// CRC-64/NVME check value from the CRC catalogue (reveng): "123456789".
	h := newCRC64()
	h.Write([]byte("123456789"))
	if got := h.Sum64(); got != 0xae8b14860a799888 {
		t.Fatalf("crc64nvme(123456789) = %#x, want 0xae8b14860a799888", got)
	}
	// The table-driven definition agrees on data long enough for the SIMD path.
	data := make([]byte, 1<<20+13)
	for i := range data {
		data[i] = byte(i*31 + i>>7)
	}
	h.Reset()
	h.Write(data)
	if want := crc64.Checksum(data, crc64.MakeTable(crc64NVMEPoly)); h.Sum64() != want {
		t.Fatalf("SIMD crc %#x, table crc %#x", h.Sum64(), want)
	}
}

func TestChecksumHeaderIsBase64OfTheBigEndianBytes(t *testing.T) {
	if got := checksumHeader(0xae8b14860a799888); got != "rosUhgp5mIg=" {
		t.Fatalf("header = %q", got)
	}
}

func TestCRC64CombineEqualsTheCRCOfTheConcatenation(t *testing.T) {
	tab := crc64.MakeTable(crc64NVMEPoly)
	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	whole := crc64.Checksum(data, tab)
	for _, cut := range []int{0, 1, 8, 4096, 1 << 20, 3<<20 + 16, len(data)} {
		a, b := data[:cut], data[cut:]
		got := crc64Combine(crc64.Checksum(a, tab), crc64.Checksum(b, tab), int64(len(b)))
		if got != whole {
			t.Errorf("cut at %d: combined %#x, want %#x", cut, got, whole)
		}
	}
}
