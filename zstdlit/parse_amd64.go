//go:build amd64 && !purego

package zstdlit

import "slices"

// The windowed parse's loop in assembly on amd64. Go compiled parseWindow
// to about 70 instructions a position that finds no match and 200 a match
// (cachegrind, camera frames, level 1): bounds checks, and spills and
// reloads at the loop's back edge of the twenty values it keeps. The
// assembly keeps the position, the anchor, the chunk, the table and the
// last offset in registers and reads the rest from its argument block.
// TestTheParseAssemblyParsesAsGoDoes holds it to parseWindow's literals,
// sequences, repeat offsets and tables, at every rung.

// parseAsm is parseAMD64's argument block; the assembly addresses its
// fields by offset (the test checks them).
type parseAsm struct {
	src     *byte      // 0: the frame
	tab     *uint32    // 8: the table, 1<<HashLog entries
	lits    *byte      // 16: the literals, room for the block's bytes and 8 more
	seqs    *sequence  // 24: room for the block's bytes / MinMatch + 1
	mul     uint64     // 32: hashPrime << (64 - 8*MinMatch): hashTag's product in one multiply
	hl      uint64     // 40: 64 - HashLog
	tagMask uint64     // 48: the entries' tag bits
	posMask uint64     // 56: the entries' position bits
	mask    uint64     // 64: the bytes a match shares at least
	mask8   uint64     // 72: mask >> 8, for the repeat offset one byte on
	mm      uint64     // 80: MinMatch
	stride  uint64     // 88
	ss      uint64     // 96: SearchStrength
	end     uint64     // 104: the block's end
	limit   uint64     // 112: end - 8, the last position + 1 with 8 bytes to read
	maxOff  uint64     // 120: the farthest a match reaches
	ip      uint64     // 128: in: the block's start; out: where the parse stopped
	anchor  uint64     // 136: out: the first byte not yet in a sequence
	nl, ns  uint64     // 144, 152: out: the literals and sequences written
	r0      uint64     // 160: the repeat offsets, in and out
	r1, r2  uint64     // 168, 176
	long    *uint32    // 184: the long table, nil without one
	hl2     uint64     // 192: 64 - LongHashLog
	prime   uint64     // 200: hashPrime, the long table's multiplier
	fill    uint64     // 208: 1 with WindowOptions.Fill
	llc     *uint8     // 216: the sequences' codes, out: literal length,
	mlc     *uint8     // 224: match length
	ofc     *uint8     // 232: and offset, one a sequence
	cnt     *seqCounts // 240: their counts, out (zeroed before)
	repEnd  uint64     // 248: the last offset is tried below it (repProbe)
	ss2     uint64     // 256: the step's second growth shift (searchShift2)
}

//go:noescape
func parseAMD64(a *parseAsm)

// parse is parseWindow in assembly: the same literals, sequences, repeat
// offsets and tables. It also writes the sequences' codes to e.sw's and
// counts them, which the sequences section then need not: in the parse,
// which waits on its loads, that work is mostly hidden. It returns the
// counts, or nil where a core without BMI2 runs parseWindow.
func (e *windowEncoder) parse(src []byte, start, end, maxOff int, opt WindowOptions) *seqCounts {
	if !hasBMI2 {
		e.parseWindow(src, start, end, maxOff, opt)
		return nil
	}
	ns := e.room(end-start, opt.MinMatch)
	sw := &e.sw
	sw.ll = slices.Grow(sw.ll[:0], ns)[:ns]
	sw.ml = slices.Grow(sw.ml[:0], ns)[:ns]
	sw.of = slices.Grow(sw.of[:0], ns)[:ns]
	e.cnt = seqCounts{}
	_ = src[end-1]
	_ = e.table[1<<opt.HashLog-1]
	mm := uint(opt.MinMatch)
	tagMask := e.tagMask
	a := parseAsm{
		src: &src[0], tab: &e.table[0], lits: &e.wlits[0], seqs: &e.wseqs[0],
		mul: hashPrime << (64 - 8*mm), hl: uint64(64 - opt.HashLog),
		tagMask: uint64(tagMask), posMask: uint64(^tagMask),
		mask: 1<<(8*mm) - 1, mask8: (1<<(8*mm) - 1) >> 8, mm: uint64(mm),
		stride: uint64(opt.Stride), ss: uint64(opt.SearchStrength), ss2: uint64(searchShift2(opt)),
		end: uint64(end), limit: uint64(end - 8), maxOff: uint64(maxOff), ip: uint64(start),
		r0: uint64(e.rep[0]), r1: uint64(e.rep[1]), r2: uint64(e.rep[2]), repEnd: uint64(start + repProbe),
		hl2: uint64(e.hl2), prime: hashPrime,
		llc: &sw.ll[0], mlc: &sw.ml[0], ofc: &sw.of[0], cnt: &e.cnt,
	}
	if opt.Fill {
		a.fill = 1
	}
	if e.long != nil {
		_ = e.long[1<<(64-e.hl2)-1]
		a.long = &e.long[0]
	}
	if end-8 > start {
		parseAMD64(&a)
	} else {
		a.anchor = uint64(start)
	}
	nl := int(a.nl) + copy(e.wlits[a.nl:], src[a.anchor:end])
	e.wlits, e.wseqs = e.wlits[:nl], e.wseqs[:a.ns]
	e.rep = [3]uint32{uint32(a.r0), uint32(a.r1), uint32(a.r2)}
	return &e.cnt
}
