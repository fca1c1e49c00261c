package s3sink

import (
	"fmt"
	"testing"
)

// bitwiseCRC is the textbook reflected CRC, a bit at a time: the
// definition the fast implementations are held to.
func bitwiseCRC(c checksum, data []byte) uint64 {
	mask := uint64(1)<<c.bits - 1
	if c.bits == 64 {
		mask = ^uint64(0)
	}
	crc := mask
	for _, b := range data {
		crc ^= uint64(b)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ c.poly
			} else {
				crc >>= 1
			}
		}
	}
	return crc ^ mask
}

func testData(n, mul int) []byte {
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*mul + i>>9)
	}
	return data
}

func TestEveryChecksumMatchesItsCatalogueCheckValueAndHeader(t *testing.T) {
	// Check values from the CRC catalogue (reveng) for "123456789"; the
	// header is what S3 states: the big-endian bytes, base64.
	for _, tc := range []struct {
		sum    checksum
		check  uint64
		header string
	}{
		{crc32cSum, 0xe3069283, "4waSgw=="},
		{crc64nvmeSum, 0xae8b14860a799888, "rosUhgp5mIg="},
	} {
		t.Run(tc.sum.name, func(t *testing.T) {
			if got := tc.sum.of([]byte("123456789")); got != tc.check {
				t.Fatalf("%s(123456789) = %#x, want %#x", tc.sum.name, got, tc.check)
			}
			if got := bitwiseCRC(tc.sum, []byte("123456789")); got != tc.check {
				t.Fatalf("the bitwise definition gives %#x, want %#x: the polynomial is wrong", got, tc.check)
			}
			if got := tc.sum.header(tc.check); got != tc.header {
				t.Fatalf("header = %q, want %q", got, tc.header)
			}
		})
	}
}

func TestTheFastHashesAgreeWithTheBitwiseDefinitionOnLongData(t *testing.T) {
	data := testData(1<<18+13, 31) // long enough for the SIMD paths
	for _, c := range []checksum{crc32cSum, crc64nvmeSum} {
		if got, want := c.of(data), bitwiseCRC(c, data); got != want {
			t.Errorf("%s: fast %#x, bitwise %#x", c.name, got, want)
		}
	}
}

func TestCombiningTwoPartsCRCsGivesTheCRCOfTheirConcatenation(t *testing.T) {
	data := testData(3<<20+17, 7)
	for _, c := range []checksum{crc32cSum, crc64nvmeSum} {
		whole := c.of(data)
		for _, cut := range []int{0, 1, 8, 4096, 1 << 20, 3<<20 + 16, len(data)} {
			t.Run(fmt.Sprintf("%s/cut=%d", c.name, cut), func(t *testing.T) {
				a, b := data[:cut], data[cut:]
				if got := c.combine(c.of(a), c.of(b), int64(len(b))); got != whole {
					t.Errorf("combined %#x, want %#x", got, whole)
				}
			})
		}
	}
}

func TestASealedRecordNamesItsChecksum(t *testing.T) {
	for _, tc := range []struct {
		name, record, wantSum, wantValue string
		wantErr                          bool
	}{
		{"a crc32c record", "crc32c:4waSgw==", "crc32c", "4waSgw==", false},
		{"a crc64nvme record", "crc64nvme:rosUhgp5mIg=", "crc64nvme", "rosUhgp5mIg=", false},
		{"a record from before the choice is crc64nvme", "rosUhgp5mIg=", "crc64nvme", "rosUhgp5mIg=", false},
		{"a record naming another algorithm is refused", "sha1:abc", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, v, err := parseSealed(tc.record)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (sum.name != tc.wantSum || v != tc.wantValue) {
				t.Fatalf("got %s %q, want %s %q", sum.name, v, tc.wantSum, tc.wantValue)
			}
		})
	}
	if got := crc32cSum.sealed("4waSgw=="); got != "crc32c:4waSgw==" {
		t.Fatalf("sealed = %q", got)
	}
}
