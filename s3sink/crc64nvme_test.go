package s3sink

import (
	"hash/crc64"
	"testing"
)

func TestCRC64NVMEMatchesTheCatalogueCheckValue(t *testing.T) {
	// CRC-64/NVME check value from the CRC catalogue (reveng): "123456789".
	if got := crc64.Checksum([]byte("123456789"), newCRC64Table()); got != 0xae8b14860a799888 {
		t.Fatalf("crc64nvme(123456789) = %#x, want 0xae8b14860a799888", got)
	}
}

func TestChecksumHeaderIsBase64OfTheBigEndianBytes(t *testing.T) {
	if got := checksumHeader(0xae8b14860a799888); got != "rosUhgp5mIg=" {
		t.Fatalf("header = %q", got)
	}
}
