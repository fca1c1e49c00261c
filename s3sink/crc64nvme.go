package s3sink

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc64"
)

// CRC-64/NVME (the polynomial S3 calls CRC64NVME), in the reflected form
// hash/crc64 expects; init and final xor of all ones match crc64.Update.
const crc64NVMEPoly = 0x9a6c9329ac4bc9b5

func newCRC64Table() *crc64.Table { return crc64.MakeTable(crc64NVMEPoly) }

// checksumHeader is the value S3 expects in x-amz-checksum-crc64nvme: the
// big-endian bytes of the CRC, base64-encoded.
func checksumHeader(sum uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], sum)
	return base64.StdEncoding.EncodeToString(b[:])
}
