package zstdlit

import "encoding/binary"

// Match finding. A block is cut into segments that are parsed on their
// own, so that the GPU can give each segment to its own thread and still
// write the reference's bytes:
//
//   - cand(p) is the latest q < p in p's segment whose 4 bytes hash like
//     p's (an 8-bit multiplicative hash), or none. Every position of
//     the segment with 4 bytes left is inserted, inside matches too.
//   - The parse is greedy: at p, the match with cand(p) is taken when its
//     length (capped at the segment's end) is ≥ Options.MinMatch, else p
//     is a literal.
//   - Offsets are coded with repeat codes only against the offsets of the
//     segment's own earlier sequences, whatever came before it; the
//     decoder's history agrees with those entries, so the codes are right.
//   - A segment's literals after its last match carry over to the next
//     sequence of the block.
const (
	// SegmentSize is the span parsed on its own (the GPU's unit per thread).
	SegmentSize = 1024
	// hashBits sizes a segment's table of latest positions.
	hashBits = 8
	// minMatchFloor is the shortest match ever taken (Options.MinMatch may
	// ask for longer): 4-byte matches cost more than their literals on
	// 12-bit camera data, and a segment's sequence slots assume ≥ 5.
	minMatchFloor = 5
	minMatchCeil  = 8
	noPos         = 0xFFFF
)

func hash4(v uint32) uint32 { return (v * 2654435761) >> (32 - hashBits) }

// parser holds reusable scratch space for parseBlock.
type parser struct {
	minMatch uint32 // Options.ShortestMatch; 0 (a zero parser) is the floor
	seeded   bool   // Options.Seeded: parseBlockSeeded's rules (seeded.go)
	table    [1 << hashBits]uint16
	seed     []int32 // the seeded parse's block table
	lits     []byte
	seqs     []sequence
}

// parseBlock fills p.lits and p.seqs for blk.
func (p *parser) parseBlock(blk []byte) {
	if p.seeded {
		p.parseBlockSeeded(blk)
		return
	}
	p.lits, p.seqs = p.lits[:0], p.seqs[:0]
	carry := uint32(0) // literals since the block's last match
	for s := 0; s < len(blk); s += SegmentSize {
		carry = p.parseSegment(blk[s:min(s+SegmentSize, len(blk))], carry)
	}
}

// parseSegment parses seg, the first sequence's literal length counting
// carry more literals from before it, and returns the literals since the
// segment's last match (plus carry if it has none).
func (p *parser) parseSegment(seg []byte, carry uint32) uint32 {
	for i := range p.table {
		p.table[i] = noPos
	}
	mm := max(p.minMatch, minMatchFloor)
	var hist [3]uint32 // the segment's repeat offsets, most recent first
	known := 0
	litStart := 0
	n := len(seg)
	for i := 0; i+4 <= n; {
		h := hash4(binary.LittleEndian.Uint32(seg[i:]))
		c := int(p.table[h])
		p.table[h] = uint16(i)
		l := 0
		if c != noPos {
			for i+l < n && seg[c+l] == seg[i+l] {
				l++
			}
		}
		if uint32(l) < mm {
			i++
			continue
		}
		ll := uint32(i-litStart) + carry
		carry = 0
		p.lits = append(p.lits, seg[litStart:i]...)
		ov := repCode(&hist, &known, uint32(i-c), ll == 0)
		p.seqs = append(p.seqs, sequence{litLen: ll, matchLen: uint32(l), offVal: ov})
		for j := i + 1; j < i+l && j+4 <= n; j++ {
			p.table[hash4(binary.LittleEndian.Uint32(seg[j:]))] = uint16(j)
		}
		i += l
		litStart = i
	}
	p.lits = append(p.lits, seg[litStart:]...)
	return carry + uint32(n-litStart)
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
