package s3sink

import (
	"encoding/base64"
	"fmt"
	"hash"
	"hash/crc32"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/crc64nvme"
)

// checksum is one of the whole-object checksums S3 keeps for a multipart
// upload of type FULL_OBJECT: a CRC, so that the object's value follows
// from its parts' (combine) and every byte is hashed once, as it arrives.
// The config's destination.checksum picks one (config.ChecksumChoices).
type checksum struct {
	name string // as the config and the journal spell it
	alg  types.ChecksumAlgorithm
	bits int    // 32 or 64
	poly uint64 // reflected polynomial; init and final xor are all ones
	new  func() hash.Hash
}

var (
	// CRC-32C (Castagnoli): an instruction of its own on x86-64 (SSE4.2)
	// and arm64, so every server computes it at memory speed.
	crc32cSum = checksum{name: "crc32c", alg: types.ChecksumAlgorithmCrc32c, bits: 32, poly: 0x82f63b78,
		new: func() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) }}
	// CRC-64/NVME: carry-less multiply here (github.com/minio/crc64nvme,
	// ~68 GB/s), but a server may compute it from byte tables: versitygw
	// 1.8 does, at ~1 GB/s, a sixth of its CPU on a 16-core upload.
	crc64nvmeSum = checksum{name: "crc64nvme", alg: types.ChecksumAlgorithmCrc64nvme, bits: 64, poly: 0x9a6c9329ac4bc9b5,
		new: func() hash.Hash { return crc64nvme.New() }}
)

// checksumNamed is the checksum the config names (its check has refused
// any other).
func checksumNamed(name string) (checksum, error) {
	for _, c := range []checksum{crc32cSum, crc64nvmeSum} {
		if c.name == name {
			return c, nil
		}
	}
	return checksum{}, fmt.Errorf("checksum %q: want crc32c or crc64nvme", name)
}

// value is h's CRC as a number.
func (c checksum) value(h hash.Hash) uint64 {
	var v uint64
	for _, b := range h.Sum(nil) {
		v = v<<8 | uint64(b)
	}
	return v
}

// of is the CRC of data.
func (c checksum) of(data []byte) uint64 {
	h := c.new()
	h.Write(data)
	return c.value(h)
}

// header is the value S3 states in x-amz-checksum-<name>: the CRC's
// big-endian bytes, base64-encoded.
func (c checksum) header(v uint64) string {
	n := c.bits / 8
	b := make([]byte, n)
	for i := range n {
		b[n-1-i] = byte(v >> (8 * i))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// The SDK has one field per algorithm; these put c's where it goes.

func (c checksum) createInput(in *s3.CreateMultipartUploadInput) {
	in.ChecksumAlgorithm, in.ChecksumType = c.alg, types.ChecksumTypeFullObject
}

func (c checksum) partInput(in *s3.UploadPartInput, v string) {
	in.ChecksumAlgorithm = c.alg
	*c.field(&in.ChecksumCRC32C, &in.ChecksumCRC64NVME) = aws.String(v)
}

func (c checksum) completedPart(etag *string, num int32, v string) types.CompletedPart {
	p := types.CompletedPart{ETag: etag, PartNumber: aws.Int32(num)}
	*c.field(&p.ChecksumCRC32C, &p.ChecksumCRC64NVME) = aws.String(v)
	return p
}

// listedPart is a part ListParts returned, as CompleteMultipartUpload
// takes it back.
func (c checksum) listedPart(p types.Part) types.CompletedPart {
	return c.completedPart(p.ETag, aws.ToInt32(p.PartNumber), aws.ToString(*c.field(&p.ChecksumCRC32C, &p.ChecksumCRC64NVME)))
}

func (c checksum) completeInput(in *s3.CompleteMultipartUploadInput, v string) {
	in.ChecksumType = types.ChecksumTypeFullObject
	*c.field(&in.ChecksumCRC32C, &in.ChecksumCRC64NVME) = aws.String(v)
}

func (c checksum) putInput(in *s3.PutObjectInput, v string) {
	in.ChecksumAlgorithm = c.alg
	*c.field(&in.ChecksumCRC32C, &in.ChecksumCRC64NVME) = aws.String(v)
}

func (c checksum) stored(out *s3.HeadObjectOutput) string {
	return aws.ToString(*c.field(&out.ChecksumCRC32C, &out.ChecksumCRC64NVME))
}

func (c checksum) field(crc32c, crc64 **string) **string {
	if c.bits == 32 {
		return crc32c
	}
	return crc64
}

// A sealed object's record (pipeline.SealedObject.Checksum) names its
// checksum, "crc32c:BASE64", so that a job resumed under another setting
// completes the upload with the algorithm it was created with. A record
// without a name predates the choice: CRC64NVME, the only one then.

func (c checksum) sealed(v string) string { return c.name + ":" + v }

func parseSealed(s string) (checksum, string, error) {
	name, v, ok := strings.Cut(s, ":")
	if !ok {
		return crc64nvmeSum, s, nil
	}
	c, err := checksumNamed(name)
	return c, v, err
}

// combine returns the CRC of A‖B from crc(A), crc(B) and len(B), so that a
// shard's whole-object CRC follows from its parts' without hashing a byte
// twice. It applies len(B) zero bytes to crc(A) by repeated squaring of the
// one-zero-bit operator over GF(2) (the technique of zlib's
// crc32_combine), which works on the conditioned values the hashes return.
func (c checksum) combine(crcA, crcB uint64, lenB int64) uint64 {
	if lenB <= 0 {
		return crcA
	}
	var even, odd gf2Matrix
	w := c.bits
	odd[0] = c.poly // operator for one zero bit
	row := uint64(1)
	for n := 1; n < w; n++ {
		odd[n] = row
		row <<= 1
	}
	even.square(&odd, w) // two zero bits
	odd.square(&even, w) // four zero bits
	for {
		even.square(&odd, w) // one zero byte, then 4, 16, … bytes
		if lenB&1 != 0 {
			crcA = even.times(crcA)
		}
		if lenB >>= 1; lenB == 0 {
			break
		}
		odd.square(&even, w)
		if lenB&1 != 0 {
			crcA = odd.times(crcA)
		}
		if lenB >>= 1; lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
}

// gf2Matrix is a w×w matrix over GF(2), w ≤ 64, a column a word.
type gf2Matrix [64]uint64

func (m *gf2Matrix) times(vec uint64) uint64 {
	var sum uint64
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= m[i]
		}
	}
	return sum
}

// square sets m to a².
func (m *gf2Matrix) square(a *gf2Matrix, w int) {
	for n := range w {
		m[n] = a.times(a[n])
	}
}
