package zstdlit

// Match finding: the seeded parse. A block is cut into segments that are
// parsed on their own, so that the GPU can give each segment a thread of
// its own and still write the reference's bytes, but a segment's matches
// reach back over the whole block, not only the segment.
//
// Why: on realistic 12-bit camera chunks a segment alone remembers
// too little. Parsed with its own table of 4-byte hashes only (the parse
// before this one), it kept 91.6% of libzstd level 1's ratio on dim frames
// and 97.2% on bright ones; a larger table inside the segment barely helps
// (93.3% dim with 2^12 entries), and 4-byte hashes find two-pixel repeats
// whose sequences cost more than their literals. What libzstd has is a
// large table of 6-byte hashes over everything before.
//
// Rules (the GPU must follow them bit for bit):
//
//   - The level picks a rung (Options.rung): below level 3, keys of 6 bytes,
//     a segment table of 2^7 entries and a seed of 2^14; from level 3, keys
//     of 5 bytes, a segment table of 2^10, a seed of 2^15 and the chunk's
//     table of 2^17 (below). The seed fits the GPU's shared memory (64 and
//     128 KiB); the chunk's table lives in its global memory.
//   - A position i of a segment of n bytes is eligible when i+k ≤ n, k
//     the key length. Its key is its k bytes, hashed (seedHash) to the
//     rung's bits for each table.
//   - The segment's own table holds, by hash, the latest eligible
//     position before i in the segment (every one is inserted, inside
//     matches too). So it does not depend on the parse, only on the
//     segment's bytes: the GPU works it out apart at level 3 (zl_own3)
//     and its parse keeps no table.
//   - The block's table, the seed, holds, by hash, the latest eligible
//     position of the block's earlier segments: a segment's positions
//     enter it only after the whole segment is parsed. It does not depend
//     on the parse, only on the bytes before the segment, so the GPU can
//     build it apart (a thread block a block, walking the segments in
//     order) and hand each position its seed candidate.
//   - The chunk's table (strong rung, a frame of more than one block and
//     at most singleSegmentLimit bytes, so that the window is the whole
//     frame) holds, by hash, the latest position of the chunk's earlier
//     blocks whose key lies inside its block; a block's positions enter it
//     after the block, whatever the block's type. A position whose seed
//     entry is empty or holds other key bytes takes the chunk table's
//     entry instead, when that one holds the same key bytes.
//   - At i, the segment's candidate is tried first; when its match is
//     shorter than the minimum, the seed's is. A match is taken when it is
//     at least the minimum (the key length, or Options.MinMatch when
//     larger) and runs to the segment's end at most; a seed match may
//     start in any earlier segment of the block, or of the chunk, so
//     offsets reach up to the chunk's size.
//   - At the fast rung on an array of known element size (Options.Grid
//     2; on 8-bit data with 8-byte matches, ShortestMatch), only every
//     other position is eligible: looked up, and entered in every table.
//     The grid starts at Options.GridPhase in every segment (segments
//     and blocks start on even positions of the chunk): on 16-bit data
//     the positions of the pixels' high bytes (odd little-endian, even
//     big-endian), on the even ones otherwise. A match
//     found at i is then extended backwards, byte by byte, while the
//     bytes before it and before its candidate agree, down to the
//     segment's literals' start at most and to its candidate's own
//     segment's start (for a seed, its block's start). The parse goes on
//     at the first grid position at or after the match's end. The
//     segment's table has 2^6 entries, for half the positions.
//   - Offsets are coded with repeat codes only against the offsets of the
//     segment's own earlier sequences, whatever came before it; the
//     decoder's history agrees with those entries, so the codes are right.
//   - A segment's literals after its last match carry over to the next
//     sequence of the block.
//
// Measured against libzstd on the camera sets (2 MiB chunks,
// BenchmarkCameraRatioAgainstLibzstd), level 1 against its level 1: dim
// 102.2%, bright 102.8%, flat 100.4%, 8-bit 100.2% and, cells clipped at
// 255, 100.4% (every position, as level 3 takes them: 99.9, 100.4,
// 100.3, 100.8 and 100.0%; 8-bit data joined the grid in 73a57fd,
// with 8-byte matches, where the 6-byte ones of every position are
// mostly the background's chance repeats; 16-bit data took the odd
// grid in 34407e3, before which the even grid kept dim frames at 101.1%
// and bright cells at 102.2%). The grid
// halves the positions the GPU hashes, and gains ratio besides: the
// keys of every position straddle pixels both ways, and their chance
// matches crowd the tables. Its segment table of 2^6 entries, not 2^7, costs dim
// frames 0.2 points (101.3% with 2^7) and lets the GPU's parse fit
// twelve warps an SM instead of ten: 2-4% faster kernels (H100). At
// level 3 it does not pay: flat fields fall to 92.1%, as their pixel
// pairs repeat at odd offsets only the 5-byte keys of every position
// find. Level 3 against its
// level 3: dim 99.1%, bright 102.0%, flat 99.1%, 8-bit 102.6%. What each
// part of the strong rung buys there (measured with the 1 KiB segments of
// before, level 3 then 99.2, 102.2, 99.2 and 102.6%), one at a time on
// the rung before it
// (5-byte keys, a 2^8 segment table, the 2^15 seed: dim 95.6%, bright
// 98.4%, flat 96.7%, 8-bit 99.6%): the chunk's table of 2^17 takes
// bright to 102.2% and flat to 99.2% (a flat field or bright cells repeat
// pixel pairs that only a large table over the whole chunk remembers);
// the segment table of 2^10 takes dim to 99.2% (dim frames repeat short
// stretches inside a segment, more distinct keys than 256 entries keep).
// A larger segment table alone, or the chunk table alone, leaves dim at
// 97.2% and 97.8%. Longer segments (4 KiB) lose 4% on dim.
//
// Segments are 512 bytes, not 1 KiB as before, so that the GPU's parse,
// which keeps a warp's segments and tables in shared memory and waits on
// its loads, fits twice the warps an SM at level 1 (ten, not five) and
// four at level 3, not three. That costs no ratio on the camera sets
// (1 KiB with a 2^8 table at level 1: dim 99.4%, bright 100.4%, flat
// 100.3%, 8-bit 100.7%; 512 bytes with 2^7 gains on dim, and level 3
// with 2^10 moves by 0.2 points at most). Shorter still does:
// 256-byte segments with a 2^8 table leave level 3's dim at 98.3%, and
// 512 bytes with a 2^9 table at 98.9%.
const (
	// SegmentSize is the span parsed on its own (the GPU's unit per thread).
	SegmentSize = 512
	// minMatchFloor is the shortest match ever taken, the strong rung's
	// key length: the GPU sizes a segment's sequence slots by it
	// (SegmentSize / 5 sequences at most).
	minMatchFloor = strongKeyBytes
	minMatchCeil  = 8
	noPos         = 0xFFFF
	noSeed        = -1

	// The ladder's rungs: keys of 6 bytes, a 2^7-entry segment table and
	// a 2^14-entry seed (64 KiB of the GPU's shared memory) below level 3;
	// 5-byte keys, a 2^10-entry segment table, a 2^15-entry seed (128 KiB)
	// and a 2^17-entry chunk table from level 3.
	fastKeyBytes    = 6
	fastLocalBits   = 7
	gridLocalBits   = 6 // the fast rung's on the even grid
	fastSeedBits    = 14
	strongKeyBytes  = 5
	strongLocalBits = 10
	strongSeedBits  = 15
	chunkTableBits  = 17
)

// MaxSegmentSeqs is the most sequences a segment's parse writes, at the
// shortest match of any rung: the GPU's slots per segment.
const MaxSegmentSeqs = SegmentSize / minMatchFloor

// key is the parser's key at i: the first keyBytes bytes there, i+keyBytes
// ≤ len(b). One load and a mask where 8 bytes are there to read.
func (p *parser) key(b []byte, i int) uint64 {
	if i+8 <= len(b) {
		return load64(b, i) & p.keyMask
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
	minMatch  uint32 // Options.ShortestMatch
	keyBytes  int    // Options.KeyBytes
	keyMask   uint64 // the key's bytes of a little-endian 8-byte load
	localBits uint   // the segment table's
	seedBits  uint   // Options.SeedBits
	chunkBits uint   // the chunk table's; 0 in a frame without one
	opt       Options
	table     []uint16
	seed      []int32 // the block's table, chunk positions
	chunk     []int32 // the chunk's table, chunk positions
	useChunk  bool    // the frame being parsed keeps the chunk table
	grid      int     // Options.Grid
	phase     int     // Options.GridPhase
	blockOff  int     // the block being parsed starts here
	lits      []byte
	seqs      []sequence
}

// setRung takes opt's level and shortest match; a parser parses only
// after it.
func (p *parser) setRung(opt Options) {
	k, b := opt.rung()
	p.keyBytes, p.seedBits, p.minMatch = k, b, uint32(opt.ShortestMatch())
	p.keyMask = 1<<(8*k) - 1
	p.localBits = uint(opt.SegmentTableBits())
	p.opt = opt
	p.grid = opt.Grid()
	p.phase = opt.GridPhase()
	if len(p.table) != 1<<p.localBits {
		p.table = make([]uint16, 1<<p.localBits)
	}
}

// startFrame readies the chunk table for a frame of n bytes
// (Options.ChunkTableBits).
func (p *parser) startFrame(n int) {
	p.chunkBits = uint(p.opt.ChunkTableBits(n))
	p.useChunk = p.chunkBits != 0
	if !p.useChunk {
		return
	}
	if len(p.chunk) != 1<<p.chunkBits {
		p.chunk = make([]int32, 1<<p.chunkBits)
	}
	for i := range p.chunk {
		p.chunk[i] = noSeed
	}
}

// endBlock enters the eligible positions of src[off:end], a block just
// written whatever its type, into the chunk table.
func (p *parser) endBlock(src []byte, off, end int) {
	if !p.useChunk || end == len(src) {
		return
	}
	for i := off + p.phase; i+p.keyBytes <= end; i += p.grid {
		p.chunk[seedHash(p.key(src, i), p.chunkBits)] = int32(i)
	}
}

// parseBlock fills p.lits and p.seqs for the block src[off:end].
func (p *parser) parseBlock(src []byte, off, end int) {
	p.lits, p.seqs = p.lits[:0], p.seqs[:0]
	if len(p.seed) != 1<<p.seedBits {
		p.seed = make([]int32, 1<<p.seedBits)
	}
	for i := range p.seed {
		p.seed[i] = noSeed
	}
	p.blockOff = off
	carry := uint32(0)
	for a := off; a < end; a += SegmentSize {
		b := min(a+SegmentSize, end)
		carry = p.parseSegment(src, a, b, carry)
		for i := a + p.phase; i+p.keyBytes <= b; i += p.grid {
			p.seed[seedHash(p.key(src, i), p.seedBits)] = int32(i)
		}
	}
}

// seedAt is the seed candidate of i, whose key is key: the block table's
// entry when it holds the same key bytes, else the chunk table's when that
// one does, else noSeed.
func (p *parser) seedAt(src []byte, i int, key uint64) int {
	if s := int(p.seed[seedHash(key, p.seedBits)]); s != noSeed && p.key(src, s) == key {
		return s
	}
	if p.useChunk {
		if s := int(p.chunk[seedHash(key, p.chunkBits)]); s != noSeed && p.key(src, s) == key {
			return s
		}
	}
	return noSeed
}

// parseSegment parses src[a:b], the first sequence's literal length
// counting carry more literals from before it, and returns the literals
// since the segment's last match (plus carry if it has none).
func (p *parser) parseSegment(src []byte, a, b int, carry uint32) uint32 {
	table := p.table
	for i := range table {
		table[i] = noPos
	}
	mm, kb, lb, g, ph := p.minMatch, p.keyBytes, p.localBits, p.grid, p.phase
	var hist [3]uint32
	known := 0
	litStart := a
	for i := a + ph; i+kb <= b; {
		key := p.key(src, i)
		h := seedHash(key, lb)
		c, l := int(table[h]), 0
		table[h] = uint16(i - a)
		if c != noPos {
			c += a
			l = matchLen(src, c, i, b)
		}
		if uint32(l) < mm {
			if s := p.seedAt(src, i, key); s != noSeed {
				if ls := matchLen(src, s, i, b); uint32(ls) >= mm {
					c, l = s, ls
				}
			}
		}
		if uint32(l) < mm {
			i += g
			continue
		}
		end := i + l
		for j := i + g; j < end && j+kb <= b; j += g {
			table[seedHash(p.key(src, j), lb)] = uint16(j - a)
		}
		if g > 1 {
			i, c, l = p.extendBack(src, i, c, l, litStart, a)
		}
		ll := uint32(i-litStart) + carry
		carry = 0
		p.lits = append(p.lits, src[litStart:i]...)
		ov := repCode(&hist, &known, uint32(i-c), ll == 0)
		p.seqs = append(p.seqs, sequence{litLen: ll, matchLen: uint32(l), offVal: ov})
		litStart = end
		i = a + ph + (end-a-ph+g-1)/g*g
	}
	p.lits = append(p.lits, src[litStart:b]...)
	return carry + uint32(b-litStart)
}

// extendBack moves the start of a match of l bytes at i, from candidate
// c, back over the bytes before both that agree: not before lit (the
// segment's literals' start), nor before the first byte of c's segment
// (a, when c lies in the parsed segment) or block (a seed's).
func (p *parser) extendBack(src []byte, i, c, l, lit, a int) (int, int, int) {
	floor := p.blockOff
	if c >= a {
		floor = a
	}
	for i > lit && c > floor && src[i-1] == src[c-1] {
		i, c, l = i-1, c-1, l+1
	}
	return i, c, l
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
