// Package zstdlit is a fast zstd encoder (RFC 8878): the pure-Go reference
// of the GPU encoder's exact algorithm (same parse, same block choices,
// same lengths, same bytes) and a second CPU codec.
//
// Every call to Encode writes one standard zstd frame. The frame is cut into
// blocks of at most 128 KiB. Each block is written as the smallest of:
//
//   - an RLE block, when the block holds one distinct byte (and is ≥ 2 bytes);
//   - a Compressed block: the literals section, then the sequences section;
//   - a Raw block otherwise.
//
// Rules (the GPU kernels must follow them bit for bit):
//
//   - Each 512-byte segment of the block is parsed on its own, so the GPU
//     parses every segment in its own thread, its matches reaching the
//     block's earlier segments too (match.go says how). The sequences section codes literal lengths, offsets and
//     match lengths with tables normalized from the block's own codes
//     (FSE_Compressed_Mode, zstd's table-log rule), or RLE_Mode for a
//     stream with a single code (seq.go). The matches are kept only when
//     that section is no larger than the bytes they cover; otherwise the
//     whole block is literals and the section is the byte 0x00.
//   - The literals section is RLE when the literals are one distinct byte,
//     Huffman-coded when they are at least MinHuffLiterals (64) bytes and
//     the coded section is smaller than the raw one, Raw otherwise.
//   - Huffman: fewer than 1024 literals use one stream, Size_Format 00
//     (10-bit sizes); ≥ 1024 literals four streams with a 6-byte jump
//     table, Size_Format 10 (14-bit sizes) when both sizes fit in 14 bits,
//     else 11 (18-bit sizes). Streams 1-3 hold (n+3)/4 literals each,
//     stream 4 the rest.
//   - A Compressed block is kept only when its whole content size is below
//     n - minGain(n), minGain(n) = n>>6 + 2: zstd's ZSTD_minGain for the
//     non-ultra strategies. Otherwise the block is Raw. Blocks under 64
//     bytes are always Raw.
//   - Huffman code lengths are optimal under an 11-bit limit (package-merge,
//     ties broken by symbol value), so the code is always complete. The
//     description uses Max_Number_of_Bits = the longest length actually used.
//   - Canonical codes follow RFC 8878 §4.2.1.3: symbols are ranked by
//     increasing weight (longest codes first), ties by symbol value, and codes
//     count up from 0, so the longest codes are numerically smallest.
//   - The tree description is FSE-compressed weights when that is possible
//     (at least two weights, two distinct weight values) with accuracy log 5
//     or 6, whichever is smaller (5 on a tie); direct 4-bit weights are used
//     instead when they are strictly smaller or FSE is impossible, and need
//     Max_Symbol ≤ 128. When neither can be made, the literals are Raw.
package zstdlit

import (
	"encoding/binary"
	"slices"
	"sync"

	"github.com/cespare/xxhash/v2"
)

const (
	magic = 0xFD2FB528
	// MaxBlockSize is the largest block the encoder writes.
	MaxBlockSize = 128 << 10
	// MinHuffLiterals is the smallest block that is tried with Huffman coding.
	MinHuffLiterals = 64
	// MaxHuffBits is the code-length limit.
	MaxHuffBits = 11
	// singleSegmentLimit: frames larger than this use a 128 KiB window
	// descriptor instead of Single_Segment (the content size is kept).
	singleSegmentLimit = 8 << 20
)

// Options configures Encode.
type Options struct {
	// Checksum appends the low 4 bytes of the XXH64 of the content.
	Checksum bool
	// Level is the compression level in zstd's numbering: below 3 the
	// parse's fast rung, 3 and up its strong one (match.go). 0 is taken
	// as 1 here, so that the zero Options are the fast rung; a caller
	// holding zstd's "default level" 0 maps it to 3 first.
	Level int
	// MinMatch is the shortest match taken, from the rung's key length
	// (6 fast, 5 strong) to 8; 0 means the key length.
	MinMatch int
	// ElemSize is the size in bytes of the array's elements, 0 where
	// they are not known (then the parse takes every position): the fast
	// rung parses arrays on every other position (Grid, from GridPhase),
	// and 8-bit ones there with 8-byte matches (ShortestMatch).
	ElemSize int
	// BigEndian says the elements' most significant byte comes first,
	// which moves the grid's phase with it (GridPhase).
	BigEndian bool
}

// Strong reports whether o takes the parse's strong rung.
func (o Options) Strong() bool { return o.Level >= 3 }

// rung is the parse's key length and seed table size for o's level.
func (o Options) rung() (keyBytes int, seedBits uint) {
	if o.Strong() {
		return strongKeyBytes, strongSeedBits
	}
	return fastKeyBytes, fastSeedBits
}

// KeyBytes is the length of the parse's keys for o's level: the shortest
// match it can take.
func (o Options) KeyBytes() int {
	k, _ := o.rung()
	return k
}

// SeedBits is log2 of the entries of the parse's seed table for o's level.
func (o Options) SeedBits() int {
	_, b := o.rung()
	return int(b)
}

// Grid is the spacing of the positions the parse looks up and enters in
// its tables (match.go): 2 at the fast rung on an array of known element
// size, and 1 otherwise. On 16-bit and wider data a match that pays
// starts on a pixel; on 8-bit camera frames the 6-byte chance matches of
// the background cost more than their literals, and 8-byte matches looked
// up on every other byte (and extended back) store about as much at half
// the look-ups (ShortestMatch).
func (o Options) Grid() int {
	if !o.Strong() && o.ElemSize >= 1 {
		return 2
	}
	return 1
}

// GridPhase is the first position of the grid in every segment (and
// block, and chunk, which all start on even positions): on 16-bit arrays
// that of a pixel's high byte (1 little-endian, 0 big-endian), so that
// keys start there, and 0 otherwise.
// The fast rung's 6-byte key spans three pixels, and on either grid it
// holds all three low bytes, where a camera's noise lies; a match found
// from a high byte then extends back over the low byte before it, so
// matches come out a byte longer and fewer. On the realistic cameras at level 1 that stored
// less: dim frames 101.1 -> 102.2% of libzstd's ratio, bright cells
// 102.2 -> 102.8%, flat fields 100.4% either way. Wider elements were
// not measured and keep the even grid.
func (o Options) GridPhase() int {
	if o.Grid() == 2 && o.ElemSize == 2 && !o.BigEndian {
		return 1
	}
	return 0
}

// SegmentTableBits is the bits of the table each segment's parse keeps
// of its own positions at o's level.
func (o Options) SegmentTableBits() int {
	switch {
	case o.Strong():
		return strongLocalBits
	case o.Grid() == 2:
		return gridLocalBits
	}
	return fastLocalBits
}

// ChunkTableBits is the bits of the table of the chunk's earlier blocks
// that the parse asks for a frame of n bytes at o's level, 0 when it keeps
// none: below level 3, in a frame of one block, and in one larger than
// singleSegmentLimit, whose window is a block's.
func (o Options) ChunkTableBits(n int) int {
	if !o.Strong() || n <= MaxBlockSize || n > singleSegmentLimit {
		return 0
	}
	return chunkTableBits
}

// SeedTableBytes is the size of the parse's seed table for o's level, 4
// bytes an entry: the GPU keeps it in shared memory.
func (o Options) SeedTableBytes() int { return 4 << o.SeedBits() }

// ShortestMatch is the effective MinMatch: at least the rung's key
// length, at most 8; 8 when MinMatch is 0 on 8-bit data on the grid.
func (o Options) ShortestMatch() int {
	mm := o.MinMatch
	if mm == 0 && o.ElemSize == 1 && o.Grid() == 2 {
		mm = minMatchCeil
	}
	return min(max(mm, o.KeyBytes()), minMatchCeil)
}

// Encode appends one zstd frame holding src to dst and returns the result.
func Encode(dst, src []byte, opt Options) []byte {
	// The frame never exceeds header + raw blocks + checksum.
	dst = slices.Grow(dst, 18+len(src)+3*(len(src)/MaxBlockSize+1)+4)
	dst = appendFrameHeader(dst, uint64(len(src)), opt.Checksum)
	if len(src) == 0 {
		dst = appendBlockHeader(dst, true, blockRaw, 0)
	}
	e := encoders.Get().(*encoder)
	e.p.setRung(opt)
	e.p.startFrame(len(src))
	for off := 0; off < len(src); off += MaxBlockSize {
		end := min(off+MaxBlockSize, len(src))
		dst = e.appendBlock(dst, src, off, end)
		e.p.endBlock(src, off, end)
	}
	encoders.Put(e)
	if opt.Checksum {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(xxhash.Sum64(src)))
	}
	return dst
}

// FrameHeaderSize is the size of the header Encode writes for n bytes.
func FrameHeaderSize(n int) int {
	return len(appendFrameHeader(nil, uint64(n), false))
}

func appendFrameHeader(dst []byte, n uint64, checksum bool) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, magic)
	var fhd byte
	if checksum {
		fhd |= 1 << 2
	}
	if n > singleSegmentLimit {
		// Window descriptor: exponent 7, mantissa 0 = 1<<(10+7) = 128 KiB.
		if n <= 0xFFFFFFFF {
			dst = append(dst, fhd|2<<6, 7<<3)
			return binary.LittleEndian.AppendUint32(dst, uint32(n))
		}
		dst = append(dst, fhd|3<<6, 7<<3)
		return binary.LittleEndian.AppendUint64(dst, n)
	}
	fhd |= 1 << 5 // Single_Segment
	switch {
	case n <= 0xFF:
		return append(dst, fhd, byte(n))
	case n <= 0xFFFF+256:
		dst = append(dst, fhd|1<<6)
		return binary.LittleEndian.AppendUint16(dst, uint16(n-256))
	default:
		dst = append(dst, fhd|2<<6)
		return binary.LittleEndian.AppendUint32(dst, uint32(n))
	}
}

const (
	blockRaw        = 0
	blockRLE        = 1
	blockCompressed = 2
)

func appendBlockHeader(dst []byte, last bool, typ, size int) []byte {
	h := uint32(size)<<3 | uint32(typ)<<1
	if last {
		h |= 1
	}
	return append(dst, byte(h), byte(h>>8), byte(h>>16))
}

// minGain is zstd's ZSTD_minGain for strategies below btultra.
func minGain(n int) int { return n>>6 + 2 }

var encoders = sync.Pool{New: func() any { return new(encoder) }}

type encoder struct {
	hist [histTables][256]uint32
	h    huffEnc
	p    parser
	sw   seqWriter
	buf  []byte
	// seqBuf holds the block's sequences section.
	seqBuf []byte
	noSeqs [1]byte // Number_of_Sequences 0
}

func (e *encoder) appendBlock(dst, src []byte, off, end int) []byte {
	blk, last := src[off:end], end == len(src)
	n := len(blk)
	hist := histogram(&e.hist, blk)
	if n >= 2 && hist[blk[0]] == uint32(n) {
		dst = appendBlockHeader(dst, last, blockRLE, n)
		return append(dst, blk[0])
	}
	if n >= MinHuffLiterals {
		lits, seqs := e.matches(src, off, end)
		if len(seqs) > 0 {
			hist = histogram(&e.hist, lits)
		}
		body := e.h.appendLiteralsSection(e.buf[:0], lits, hist)
		body = append(body, seqs...)
		e.buf = body
		if len(body) < n-minGain(n) {
			dst = appendBlockHeader(dst, last, blockCompressed, len(body))
			return append(dst, body...)
		}
	}
	dst = appendBlockHeader(dst, last, blockRaw, n)
	return append(dst, blk...)
}

// matches parses blk and returns its literals and its sequences section.
// The matches are kept only when their section is no larger than the bytes
// they cover (so it fits, on the GPU, in the room the literals leave in
// the block); otherwise the whole block is literals and the section is the
// single byte 0x00 (no sequences).
func (e *encoder) matches(src []byte, off, end int) (lits, section []byte) {
	blk := src[off:end]
	e.p.parseBlock(src, off, end)
	if len(e.p.seqs) > 0 {
		e.seqBuf = e.sw.appendSequences(e.seqBuf[:0], e.p.seqs)
		if len(e.seqBuf) <= len(blk)-len(e.p.lits) {
			return e.p.lits, e.seqBuf
		}
	}
	return blk, e.noSeqs[:]
}

// histTables is how many tables histogram counts in: byte i goes to table
// i mod 8. Repeated bytes would serialize on one counter, each increment
// waiting for the last; 12-bit samples repeat every other byte (their high
// bytes take a few values), so with four tables two of them took every
// second increment. Eight, fed by one 8-byte load, count bright camera
// literals at 2.25 against 1.78 GB/s on a dev core.
const histTables = 8

// histogram counts the bytes of b and returns the counts (h's first
// table).
func histogram(h *[histTables][256]uint32, b []byte) *[256]uint32 {
	if len(b) < 4096 {
		// Clearing and adding up eight tables would cost more than counting.
		h[0] = [256]uint32{}
		for _, c := range b {
			h[0][c]++
		}
		return &h[0]
	}
	*h = [histTables][256]uint32{}
	i := 0
	for ; i+8 <= len(b); i += 8 {
		// Eight byte loads, each indexing its table straight from
		// memory: one 8-byte load took a copy, a shift and a
		// zero-extension a byte, twice the instructions.
		p := (*[8]byte)(b[i : i+8])
		h[0][p[0]]++
		h[1][p[1]]++
		h[2][p[2]]++
		h[3][p[3]]++
		h[4][p[4]]++
		h[5][p[5]]++
		h[6][p[6]]++
		h[7][p[7]]++
	}
	for ; i < len(b); i++ {
		h[0][b[i]]++
	}
	for s := range h[0] {
		h[0][s] += h[1][s] + h[2][s] + h[3][s] + h[4][s] + h[5][s] + h[6][s] + h[7][s]
	}
	return &h[0]
}
