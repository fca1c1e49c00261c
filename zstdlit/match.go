package zstdlit

import "encoding/binary"

// Match finding: the seeded parse. A block is cut into segments that are
// parsed on their own, so that the GPU can give each segment a thread of
// its own and still write the reference's bytes, but a segment's matches
// reach back over the whole block, not only the segment.
//
// Why: on realistic 12-bit camera chunks a 1 KiB segment alone remembers
// too little. Parsed with its own table of 4-byte hashes only (the parse
// before this one), it kept 91.6% of libzstd level 1's ratio on dim frames
// and 97.2% on bright ones; a larger table inside the segment barely helps
// (93.3% dim with 2^12 entries), and 4-byte hashes find two-pixel repeats
// whose sequences cost more than their literals. What libzstd has is a
// large table of 6-byte hashes over everything before.
//
// Rules (the GPU must follow them bit for bit):
//
//   - The level picks a rung (Options.rung): below level 3, keys of 6 bytes
//     and a seed of 2^14 entries; from level 3, keys of 5 bytes and a seed
//     of 2^15. Both tables fit the GPU's shared memory (64 and 128 KiB).
//   - A position i of a segment of n bytes is eligible when i+k ≤ n, k
//     the key length. Its key is its k bytes, hashed (seedHash) to
//     seedLocalBits bits for the segment's own table and to the rung's
//     seed bits for the block's.
//   - The segment's own table holds, by hash, the latest eligible
//     position before i in the segment (every one is inserted, inside
//     matches too).
//   - The block's table, the seed, holds, by hash, the latest eligible
//     position of the block's earlier segments: a segment's positions
//     enter it only after the whole segment is parsed. It does not depend
//     on the parse, only on the bytes before the segment, so the GPU can
//     build it apart (a thread block a block, walking the segments in
//     order) and hand each position its seed candidate.
//   - At i, the segment's candidate is tried first; when its match is
//     shorter than the minimum, the seed's is. A match is taken when it is
//     at least the minimum (the key length, or Options.MinMatch when
//     larger) and runs to the segment's end at most; a seed match may
//     start in any earlier segment of the block, so offsets reach up to
//     the block's size.
//   - Offsets are coded with repeat codes only against the offsets of the
//     segment's own earlier sequences, whatever came before it; the
//     decoder's history agrees with those entries, so the codes are right.
//   - A segment's literals after its last match carry over to the next
//     sequence of the block.
//
// Measured against libzstd on the camera sets (2 MiB chunks,
// BenchmarkCameraRatioAgainstLibzstd), level 1 against its level 1: dim
// 99.4%, bright 100.4%, flat 100.3%, 8-bit 100.7%. Level 3 against its
// level 3: dim 95.6%, bright 98.4%, flat 96.7%, 8-bit 99.6% (the fast rung
// there: 95.4, 93.4, 89.8, 97.2). The 5-byte keys find the pixel pairs
// that flat fields and bright cells repeat; the larger seed keeps more
// of them. What the rest of libzstd level 3's lead takes is a table over
// the whole chunk, not the block: in Go, a 2^16-entry one carried across
// the chunk's blocks keeps dim 97.8%, bright 100.6%, flat 98.4%, which the
// GPU could only keep in global memory.
const (
	// SegmentSize is the span parsed on its own (the GPU's unit per thread).
	SegmentSize = 1024
	// minMatchFloor is the shortest match ever taken, the strong rung's
	// key length: the GPU sizes a segment's sequence slots by it
	// (SegmentSize / 5 sequences at most).
	minMatchFloor = strongKeyBytes
	minMatchCeil  = 8
	noPos         = 0xFFFF

	seedLocalBits = 8
	noSeed        = -1

	// The ladder's rungs: keys of 6 bytes and a 2^14-entry seed (64 KiB
	// of the GPU's shared memory) below level 3; 5-byte keys and a
	// 2^15-entry seed (128 KiB) from level 3.
	fastKeyBytes   = 6
	fastSeedBits   = 14
	strongKeyBytes = 5
	strongSeedBits = 15
)

// MaxSegmentSeqs is the most sequences a segment's parse writes, at the
// shortest match of any rung: the GPU's slots per segment.
const MaxSegmentSeqs = SegmentSize / minMatchFloor

// key is the parser's key at i: the first keyBytes bytes there, i+keyBytes
// ≤ len(b). One load and a mask where 8 bytes are there to read.
func (p *parser) key(b []byte, i int) uint64 {
	if i+8 <= len(b) {
		return binary.LittleEndian.Uint64(b[i:]) & p.keyMask
	}
	k := uint64(0)
	for j := p.keyBytes - 1; j >= 0; j-- {
		k = k<<8 | uint64(b[i+j])
	}
	return k
}

// seedHash is key's top bits of a multiplicative hash. The key is shifted
// to the top of the word first, so that all its bytes reach those bits.
func seedHash(key uint64, bits uint) uint32 { return uint32(((key << 16) * hashPrime) >> (64 - bits)) }

// parser holds reusable scratch space for parseBlock.
type parser struct {
	minMatch uint32 // Options.ShortestMatch
	keyBytes int    // Options.KeyBytes
	keyMask  uint64 // the key's bytes of a little-endian 8-byte load
	seedBits uint   // Options.SeedBits
	table    [1 << seedLocalBits]uint16
	seed     []int32 // the block's table
	lits     []byte
	seqs     []sequence
}

// setRung takes opt's level and shortest match; a parser parses only
// after it.
func (p *parser) setRung(opt Options) {
	k, b := opt.rung()
	p.keyBytes, p.seedBits, p.minMatch = k, b, uint32(opt.ShortestMatch())
	p.keyMask = 1<<(8*k) - 1
}

// parseBlock fills p.lits and p.seqs for blk.
func (p *parser) parseBlock(blk []byte) {
	p.lits, p.seqs = p.lits[:0], p.seqs[:0]
	if len(p.seed) != 1<<p.seedBits {
		p.seed = make([]int32, 1<<p.seedBits)
	}
	for i := range p.seed {
		p.seed[i] = noSeed
	}
	carry := uint32(0)
	for a := 0; a < len(blk); a += SegmentSize {
		b := min(a+SegmentSize, len(blk))
		carry = p.parseSegment(blk, a, b, carry)
		for i := a; i+p.keyBytes <= b; i++ {
			p.seed[seedHash(p.key(blk, i), p.seedBits)] = int32(i)
		}
	}
}

// parseSegment parses blk[a:b], the first sequence's literal length
// counting carry more literals from before it, and returns the literals
// since the segment's last match (plus carry if it has none).
func (p *parser) parseSegment(blk []byte, a, b int, carry uint32) uint32 {
	table := &p.table
	for i := range table {
		table[i] = noPos
	}
	mm, kb := p.minMatch, p.keyBytes
	var hist [3]uint32
	known := 0
	litStart := a
	for i := a; i+kb <= b; {
		key := p.key(blk, i)
		h := seedHash(key, seedLocalBits)
		c, l := int(table[h]), 0
		table[h] = uint16(i - a)
		if c != noPos {
			c += a
			l = matchLen(blk, c, i, b)
		}
		if uint32(l) < mm {
			if s := int(p.seed[seedHash(key, p.seedBits)]); s != noSeed {
				if ls := matchLen(blk, s, i, b); uint32(ls) >= mm {
					c, l = s, ls
				}
			}
		}
		if uint32(l) < mm {
			i++
			continue
		}
		ll := uint32(i-litStart) + carry
		carry = 0
		p.lits = append(p.lits, blk[litStart:i]...)
		ov := repCode(&hist, &known, uint32(i-c), ll == 0)
		p.seqs = append(p.seqs, sequence{litLen: ll, matchLen: uint32(l), offVal: ov})
		for j := i + 1; j < i+l && j+kb <= b; j++ {
			table[seedHash(p.key(blk, j), seedLocalBits)] = uint16(j - a)
		}
		i += l
		litStart = i
	}
	p.lits = append(p.lits, blk[litStart:b]...)
	return carry + uint32(b-litStart)
}

// repCode returns the Offset_Value of off against the known entries of the
// repeat history and updates the history as the decoder will.
func repCode(hist *[3]uint32, known *int, off uint32, ll0 bool) uint32 {
	k := *known
	ov := off + 3
	switch {
	case !ll0 && k >= 1 && off == hist[0]:
		return 1 // history unchanged
	case !ll0 && k >= 2 && off == hist[1], ll0 && k >= 2 && off == hist[1]:
		if ll0 {
			ov = 1
		} else {
			ov = 2
		}
		hist[0], hist[1] = hist[1], hist[0]
		return ov
	case !ll0 && k >= 3 && off == hist[2]:
		ov = 3
	case ll0 && k >= 3 && off == hist[2]:
		ov = 2
	case ll0 && k >= 1 && off == hist[0]-1:
		ov = 3
	}
	hist[0], hist[1], hist[2] = off, hist[0], hist[1]
	*known = min(k+1, 3)
	return ov
}
