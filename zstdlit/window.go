package zstdlit

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// The windowed encoder: a CPU-only zstd encoder whose matches reach back
// over the whole frame, as libzstd's do, instead of one 512-byte segment.
// It shares the block format and the literals and sequences coders with
// the segmented encoder, not its parse, so its bytes are its own (the GPU
// kernels do not follow it).
//
// The parse is greedy over one table of latest positions, hashed from the
// next MinMatch bytes (and, with LongHashLog, a second one of 8-byte
// hashes asked first, as libzstd's level 3 does). A position that finds no match moves on by Stride
// plus one more byte for every 2^SearchStrength literals since the last
// match, so long stretches of noise cost little search. Before the table
// is asked, the most recent offset is tried one byte on (a decoder pays a
// few bits for it against a full offset). A new match is extended
// backwards over the literals before it. Repeat offsets are the frame's
// own (RFC 8878 §3.1.1.5), carried across blocks and rolled back when a
// block is stored without its sequences.

// windowLimit is the farthest a match reaches in a frame that is not
// Single_Segment (appendFrameHeader's 128 KiB window descriptor).
const windowLimit = 128 << 10

var windowEncoders = sync.Pool{New: func() any { return new(windowEncoder) }}

type windowEncoder struct {
	encoder
	// table holds, by hash, the latest position + 1 (0 for none) in the
	// bits below tagMask and, in tagMask's, a tag: more bits of the same
	// hash. A candidate whose tag differs is turned down without reading
	// the chunk at a random place, the parse's most expensive load, and
	// the table stays at 4 bytes an entry (256 KiB for 2^16), which
	// matters when every core runs an encoder against one cache.
	table   []uint32
	long    []uint32 // LongHashLog's table, the same entries; nil without one
	longBuf []uint32 // long's memory, kept for the next frame
	hl2     uint     // 64 - LongHashLog
	tagMask uint32   // the entries' tag bits: those above the frame's positions
	rep     [3]uint32
	wlits   []byte
	wseqs   []sequence
	cnt     seqCounts // the codes' counts, from parse where it counts them
	// treeOK says the decoder holds e.h's Huffman table: the frame's last
	// Huffman-coded literals section used it. treeBits is what a literal
	// of the block that built it took with it.
	treeOK   bool
	treeBits float64
}

// EncodeWindow appends one zstd frame holding src to dst.
func EncodeWindow(dst, src []byte, opt WindowOptions) []byte {
	opt = opt.withDefaults()
	dst = slices.Grow(dst, 18+len(src)+3*(len(src)/MaxBlockSize+1)+4)
	dst = appendFrameHeader(dst, uint64(len(src)), opt.Checksum)
	if len(src) == 0 {
		dst = appendBlockHeader(dst, true, blockRaw, 0)
	}
	e := windowEncoders.Get().(*windowEncoder)
	opt, maxOff := e.start(src, opt)
	for off := 0; off < len(src); off += MaxBlockSize {
		end := min(off+MaxBlockSize, len(src))
		dst = e.appendWindowBlock(dst, src, off, end, maxOff, opt)
	}
	windowEncoders.Put(e)
	if opt.Checksum {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(xxhash.Sum64(src)))
	}
	return dst
}

// start readies e for the frame of src and returns the options it takes
// for it (opt with its defaults applied) and the farthest a match reaches.
func (e *windowEncoder) start(src []byte, opt WindowOptions) (WindowOptions, int) {
	// A small chunk gets a table no larger than itself: clearing 256 KiB
	// for every 4 KiB chunk would cost more than the search.
	opt.HashLog = min(opt.HashLog, max(10, bits.Len(uint(len(src)))))
	opt = opt.dense(src)
	if len(e.table) != 1<<opt.HashLog {
		e.table = make([]uint32, 1<<opt.HashLog)
	} else {
		clear(e.table)
	}
	e.long = nil
	if opt.LongHashLog != 0 {
		opt.LongHashLog = min(max(opt.LongHashLog, 10), 20, opt.HashLog+4)
		e.hl2 = uint(64 - opt.LongHashLog)
		if len(e.longBuf) != 1<<opt.LongHashLog {
			e.longBuf = make([]uint32, 1<<opt.LongHashLog)
		} else {
			clear(e.longBuf)
		}
		e.long = e.longBuf
	}
	e.rep = [3]uint32{1, 4, 8}
	e.treeOK = false
	e.tagMask = ^(uint32(1)<<bits.Len(uint(len(src))) - 1)
	if len(src) > singleSegmentLimit {
		return opt, windowLimit
	}
	return opt, len(src)
}

func (e *windowEncoder) appendWindowBlock(dst, src []byte, start, end, maxOff int, opt WindowOptions) []byte {
	blk := src[start:end]
	n := len(blk)
	last := end == len(src)
	if n >= 2 && oneByte(blk) {
		e.insertRange(src, start, end, opt)
		dst = appendBlockHeader(dst, last, blockRLE, n)
		return append(dst, blk[0])
	}
	if n >= MinHuffLiterals {
		saved := e.rep
		cnt := e.parse(src, start, end, maxOff, opt)
		// The body goes straight after its header's room in dst, and the
		// header in front once its size is known: copying each block's
		// body from a scratch buffer was 1.4% of a CPU convert.
		hdr := len(dst)
		body, built := e.appendLiterals(dst[:hdr+3], e.wlits)
		body = e.sw.appendCodedSequences(body, e.wseqs, cnt)
		if size := len(body) - hdr - 3; size < n-minGain(n) {
			// A Huffman-coded section (type 2 or 3) leaves the decoder
			// with e.h's table; a raw or RLE one leaves its table as it
			// was, which e.h no longer is if it was built anew.
			e.treeOK = body[hdr+3]&3 >= 2 || e.treeOK && !built
			appendBlockHeader(body[:hdr], last, blockCompressed, size)
			return body
		}
		e.rep = saved
		e.treeOK = e.treeOK && !built
		dst = body[:hdr] // a body past its room may have moved dst
	} else {
		e.insertRange(src, start, end, opt)
	}
	dst = appendBlockHeader(dst, last, blockRaw, n)
	return append(dst, blk...)
}

// treelessSlack is how much more than its own block's bits a literal the
// decoder's table may take for a block to reuse it: bright camera cells
// then reuse it in 73% of their blocks and store 0.04% fewer literal
// bytes (no tree description), flat fields almost never (their rare
// bytes come and go), and the package-merge and tree description it
// spares were 5% of bright cells' encoder time on an H100 host.
const treelessSlack = 1.01

// appendLiterals appends the block's literals section and reports whether
// it built e.h anew. With the table the decoder holds, when that table
// codes these literals within treelessSlack of what it took for its own
// block, the section is treeless: no package-merge, no tree description,
// and, where litBits runs, no histogram. Else it is appendLiteralsSection's
// smallest.
func (e *windowEncoder) appendLiterals(dst, lits []byte) ([]byte, bool) {
	n := len(lits)
	if n < MinHuffLiterals || oneByte(lits) {
		return e.h.appendLiteralsSection(dst, lits, histogram(&e.hist, lits)), false // raw or RLE: no table built
	}
	var hist *[256]uint32
	if e.treeOK {
		var bits int
		var ok bool
		if hasLitBits {
			bits, ok = e.h.litBits(lits)
		} else {
			hist = histogram(&e.hist, lits)
			bits, ok = e.h.cost(hist)
		}
		if ok && float64(bits) <= e.treeBits*float64(n)*treelessSlack {
			if out, ok := e.h.appendLiteralsWithTable(dst, lits, true); ok && len(out)-len(dst) < rawLitHeaderSize(n)+n {
				return out, false
			}
		}
	}
	if hist == nil {
		hist = histogram(&e.hist, lits)
	}
	start := len(dst)
	out := e.h.appendLiteralsSection(dst, lits, hist)
	if out[start]&3 == 2 { // the table goes to the decoder: its own block's bits a literal
		bits, _ := e.h.cost(hist)
		e.treeBits = float64(bits) / float64(n)
	}
	return out, true
}

// insertRange enters a block that is stored whole into the table, so
// later blocks still find matches in it.
func (e *windowEncoder) insertRange(src []byte, start, end int, opt WindowOptions) {
	shift, hl := uint(64-8*opt.MinMatch), uint(64-opt.HashLog)
	for p := start; p+8 <= end; p += 2 {
		e.insert(load64(src, p), p, shift, hl)
	}
}

// insert enters position p, whose next 8 bytes are v, into the table and,
// when there is one, the long table.
func (e *windowEncoder) insert(v uint64, p int, shift, hl uint) {
	h, tag := hashTag(v, shift, hl, e.tagMask)
	e.table[h] = uint32(p+1) | tag
	if e.long != nil {
		h, tag = hashTag(v, 0, e.hl2, e.tagMask)
		e.long[h] = uint32(p+1) | tag
	}
}

// repProbe is how far into a block the parse tries the last offset at
// every position before it gives up on it for the block, unless it found
// a match there. Camera frames find almost nothing at the last offset (the
// ratio moves by less than 0.05% on every set and the corpus without it),
// yet the check was 5 to 13% of their parse's instructions; arrays of
// records find theirs within the first few rows.
const repProbe = 8 << 10

// hashPrime is the multiplier of every hash here (the windowed encoder's
// hashTag, the segmented parse's seedHash): any odd 64-bit constant with
// mixed bits.
const hashPrime = 0xCF1BBCDCB7A56463

// hashTag hashes the bytes of v that shift keeps: the table index from the
// top 64-hl bits, the tag from bits 13 to 44, kept above the frame's
// positions by tagMask (the bits above them, worked out once a frame).
// Those bits lie below the index of any table up to 2^19 entries.
// A tag only turns candidates down without reading them (the same key
// always has the same tag), so which bits it takes changes the parse's
// speed, never its output; a constant shift spares the shift register.
//
// The shifts are masked to the word, which spares the compiler's check for
// shifts past it: this is the parse's innermost arithmetic.
func hashTag(v uint64, shift, hl uint, tagMask uint32) (uint32, uint32) {
	x := (v << (shift & 63)) * hashPrime
	return uint32(x >> (hl & 63)), uint32(x>>13) & tagMask
}

// parseWindow fills e.wlits and e.wseqs for src[start:end]. It is the
// reference of parse's assembly on amd64 (parse_amd64.s) and parse
// elsewhere.
func (e *windowEncoder) parseWindow(src []byte, start, end, maxOff int, opt WindowOptions) {
	e.room(end-start, opt.MinMatch)
	nl, ns := 0, 0
	shift, hl := uint(64-8*opt.MinMatch), uint(64-opt.HashLog)
	mm := opt.MinMatch
	mask := uint64(1)<<(8*mm) - 1 // the bytes a match must share at least
	ss, ss2 := uint(opt.SearchStrength), searchShift2(opt)
	stride := opt.Stride
	tab := e.table
	long, hl2 := e.long, e.hl2
	tagMask := e.tagMask
	posMask := ^tagMask
	r0, r1, r2 := e.rep[0], e.rep[1], e.rep[2] // in registers while the block is parsed
	anchor, ip := start, start
	repUntil := start + repProbe
	limit := end - 8 // positions with 8 readable bytes inside the block
	for ip < limit {
		cur := load64(src, ip)
		h, tag := hashTag(cur, shift, hl, tagMask)
		t := tab[h]
		tab[h] = uint32(ip+1) | tag
		c, l := 0, 0 // the match at ip, l bytes from c; none while l is 0
		// The most recent offset is tried first, one byte on: a decoder
		// pays a few bits for it against a full offset. Only while a
		// block's first repProbe bytes find none is it tried no more.
		if r := int(r0); ip < repUntil && ip > anchor && ip+1-r >= 0 &&
			(load64(src, ip+1-r)^(cur>>8))&(mask>>8) == 0 {
			if l = matchLen(src, ip+1-r, ip+1, end); l >= mm {
				repUntil = end
				ip++
				c = ip - r
			} else {
				l = 0
			}
		}
		if l == 0 {
			// A candidate is taken when its tag agrees and it lies in
			// the window: 0 <= c < ip and ip-c <= maxOff, one unsigned
			// compare.
			c = int(t&posMask) - 1
			ok := t&tagMask == tag && uint(ip-c-1) < uint(min(maxOff, ip))
			if long != nil {
				h2, tag2 := hashTag(cur, 0, hl2, tagMask)
				t2 := long[h2]
				long[h2] = uint32(ip+1) | tag2
				if c2 := int(t2&posMask) - 1; t2&tagMask == tag2 && uint(ip-c2-1) < uint(min(maxOff, ip)) &&
					load64(src, c2) == cur {
					c, ok = c2, true // 8 bytes or more: before the short table's
				}
			}
			if !ok || (load64(src, c)^cur)&mask != 0 {
				d := ip - anchor
				ip += stride + d>>(ss&63) + d>>(ss2&63)
				continue
			}
			l = matchLen(src, c, ip, end)
			for ip > anchor && c > 0 && src[ip-1] == src[c-1] {
				ip--
				c--
				l++
			}
		}
		ll := uint32(ip - anchor)
		nl += e.copyLits(nl, src, anchor, ip)
		// The offset's code: repCode's cases in its order, for a frame
		// whose three repeat offsets the decoder knows from its start.
		off := uint32(ip - c)
		ov := off + 3
		switch {
		case ll != 0 && off == r0:
			ov = 1
		case off == r1:
			ov = 2 // 1 right after a match
			if ll == 0 {
				ov = 1
			}
			r0, r1 = r1, r0
		case off == r2:
			ov = 3 // 2 right after a match
			if ll == 0 {
				ov = 2
			}
			r0, r1, r2 = off, r0, r1
		case ll == 0 && off == r0-1:
			ov = 3
			r0, r1, r2 = off, r0, r1
		default:
			r0, r1, r2 = off, r0, r1
		}
		e.wseqs[ns] = sequence{litLen: ll, matchLen: uint32(l), offVal: ov}
		ns++
		ip += l
		anchor = ip
		// Of the positions the parse jumped over, with Fill every other
		// one inside the match from its third byte on, then the one two
		// bytes before its end go into the tables: the next stretch of
		// the same structure often starts there.
		if ip < limit {
			for p := ip - l + 2; opt.Fill && p < ip-2; p += 2 {
				e.insert(load64(src, p), p, shift, hl)
			}
			e.insert(load64(src, ip-2), ip-2, shift, hl)
		}
	}
	nl += copy(e.wlits[nl:], src[anchor:end])
	e.wlits, e.wseqs = e.wlits[:nl], e.wseqs[:ns]
	e.rep = [3]uint32{r0, r1, r2}
}

// searchShift2 is the shift of the step's second growth term: Accelerate,
// or 63 without it, which leaves nothing of a distance since the anchor.
func searchShift2(opt WindowOptions) uint {
	if opt.Accelerate == 0 {
		return 63
	}
	return uint(opt.Accelerate)
}

// room sizes e.wlits and e.wseqs for the worst case of a block of n bytes
// parsed with minMatch-byte matches, so that the parse (parseWindow or
// its assembly) writes by index instead of appending; the literals get 8
// bytes of slack for copies a word at a time. It returns the sequences'
// room.
func (e *windowEncoder) room(n, minMatch int) int {
	ns := n/minMatch + 1
	e.wlits = slices.Grow(e.wlits[:0], n+8)[:n+8]
	e.wseqs = slices.Grow(e.wseqs[:0], ns)[:ns]
	return ns
}

// copyLits copies src[anchor:ip] to e.wlits[nl:] and returns its length. A
// run of 8 bytes or fewer, as most between matches are, goes as one word:
// copy's call and checks cost more than the bytes (src has 8 bytes at
// anchor, which is below the parse's limit, and e.wlits 8 of slack).
func (e *windowEncoder) copyLits(nl int, src []byte, anchor, ip int) int {
	if ip-anchor <= 8 {
		binary.LittleEndian.PutUint64(e.wlits[nl:nl+8], load64(src, anchor))
		return ip - anchor
	}
	return copy(e.wlits[nl:], src[anchor:ip])
}

// matchLen is the length of the common run of src[c:] and src[ip:], ip >
// c, that ends by end.
func matchLen(src []byte, c, ip, end int) int {
	l := 0
	for ip+l+8 <= end {
		x := load64(src, ip+l) ^ load64(src, c+l)
		if x != 0 {
			return l + bits.TrailingZeros64(x)>>3
		}
		l += 8
	}
	for ip+l < end && src[ip+l] == src[c+l] {
		l++
	}
	return l
}

// load64 is the little-endian word at b[i:], which the caller knows to
// hold 8 bytes. Sliced as b[i:i+8], its bounds are one compare against
// cap(b) and one for overflow, where b[i:] costs two compares and three
// instructions more for the slice's base.
func load64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i : i+8]) }

// oneByte reports whether b holds a single distinct byte.
func oneByte(b []byte) bool {
	x := uint64(b[0]) * 0x0101010101010101
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if load64(b, i) != x {
			return false
		}
	}
	for ; i < len(b); i++ {
		if b[i] != b[0] {
			return false
		}
	}
	return true
}
