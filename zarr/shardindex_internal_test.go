package zarr

import (
	"hash/crc32"
	"testing"
)

func TestTheIndexChecksumTableIsCastagnoli(t *testing.T) {
	// crc32c("123456789") is the standard check value of CRC-32C.
	if got := crc32.Checksum([]byte("123456789"), castagnoli); got != 0xE3069283 {
		t.Fatalf("crc32 with the index table = %#08x, want 0xE3069283 (Castagnoli)", got)
	}
	if got := crc32.Checksum([]byte("123456789"), crc32.IEEETable); got == 0xE3069283 {
		t.Fatal("the IEEE table gives the Castagnoli check value; the check is meaningless")
	}
}
