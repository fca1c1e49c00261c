package zstdlit

import (
	"encoding/binary"
	"slices"
)

// The sequences section (RFC 8878 §3.1.1.3.2), coded with tables normalized
// from each block's own codes: zstd's predefined tables cost more bits than
// the matches save on 12-bit camera data.

// sequence is one zstd sequence: litLen literals, then a match of matchLen
// bytes whose Offset_Value (RFC 8878 §3.1.1.5: 1-3 repeat codes, else the
// distance + 3) is offVal.
type sequence struct {
	litLen, matchLen, offVal uint32
}

// Code baselines and extra-bit counts (RFC 8878 §3.1.1.3.2.1.1).
var (
	llBase = [36]uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}
	llBits = [36]uint8{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	mlBase = [53]uint32{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027, 2051, 4099, 8195, 16387, 32771, 65539}
	mlBits = [53]uint8{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
)

// The same tables padded to 64 entries, for the hot loop to index under a
// mask rather than a bounds check.
var (
	llBase64, mlBase64 = pad64(llBase[:]), pad64(mlBase[:])
	llBits64, mlBits64 = pad64(llBits[:]), pad64(mlBits[:])
)

func pad64[T uint8 | uint32](s []T) (p [64]T) {
	copy(p[:], s)
	return p
}

// llCode and mlCode find the largest code whose baseline is ≤ v: from a
// table for the short lengths that almost every sequence has, from the
// top bit above them (the codes there double their baselines).
func llCode(v uint32) int {
	if v < uint32(len(llCodeOf)) {
		return int(llCodeOf[v])
	}
	return highBit(v) + 19
}

func mlCode(matchLen uint32) int {
	if v := matchLen - 3; v < uint32(len(mlCodeOf)) {
		return int(mlCodeOf[v])
	}
	return highBit(matchLen-3) + 36
}

// llCodeOf and mlCodeOf are the codes of literal lengths below 64 and of
// match lengths below 128+3, by search of the baselines.
var llCodeOf, mlCodeOf = func() (ll [64]uint8, ml [128]uint8) {
	for v := range ll {
		c := len(llBase) - 1
		for llBase[c] > uint32(v) {
			c--
		}
		ll[v] = uint8(c)
	}
	for v := range ml {
		c := len(mlBase) - 1
		for mlBase[c] > uint32(v+3) {
			c--
		}
		ml[v] = uint8(c)
	}
	return ll, ml
}()

// The largest sequence-code table (log 9) and alphabet (53 match length
// codes), as powers of two: fixed arrays, indexed under a mask, keep the
// hot loop free of bounds checks and the blocks free of allocations.
const (
	fseMaxStates = 1 << 9
	fseMaxSyms   = 64
)

// fseTable is an FSE encoding table for one distribution. Its zero value
// (log 0, state 0 → 0) writes no bits for any symbol: RLE_Mode's stream.
type fseTable struct {
	log   uint
	state [fseMaxStates]uint16 // next state by (state >> nbBits) + deltaFindState
	sym   [fseMaxSyms]fseSym
}

// build makes t the encoding table the decoder's table for norm implies
// (every count ≥ 1 for a present symbol: normalize gives no "less than 1"
// probabilities): symbols spread with step 5/8·size + 3.
func (t *fseTable) build(norm []int, log uint) {
	size := 1 << log
	var spread [fseMaxStates]byte
	var cumul, next [fseMaxSyms + 1]int
	for s, n := range norm {
		cumul[s+1] = cumul[s] + n
	}
	pos, step, mask := 0, size>>1+size>>3+3, size-1
	for s, n := range norm {
		for range n {
			spread[pos] = byte(s)
			pos = (pos + step) & mask
		}
	}
	t.log = log
	t.sym = [fseMaxSyms]fseSym{}
	next = cumul
	for u := 0; u < size; u++ {
		s := spread[u]
		t.state[next[s]] = uint16(size + u)
		next[s]++
	}
	for s, c := range norm {
		if c == 0 {
			continue
		}
		maxBitsOut := uint32(log)
		if c > 1 {
			maxBitsOut = uint32(log) - uint32(highBit(uint32(c-1)))
		}
		t.sym[s] = fseSym{deltaNbBits: maxBitsOut<<16 - uint32(c)<<maxBitsOut, deltaFindState: int32(cumul[s] - c)}
	}
}

// setRLE makes t the table of RLE_Mode: no state, no bits.
func (t *fseTable) setRLE() {
	t.log = 0
	t.state[0] = 0
	t.sym = [fseMaxSyms]fseSym{}
}

func (t *fseTable) init(s int) uint32 {
	d := t.sym[s]
	nbOut := (d.deltaNbBits + 1<<15) >> 16
	v := nbOut<<16 - d.deltaNbBits
	return uint32(t.state[int32(v>>nbOut)+d.deltaFindState])
}

// seqCoder codes one of the three sequence code streams in one block: with
// a table normalized from the block's own histogram (FSE_Compressed_Mode),
// or, when a single code occurs, RLE_Mode (no state bits at all).
type seqCoder struct {
	count []uint32
	n     []int
	rle   bool
	t     fseTable // setRLE's when rle
	st    uint32
}

// plan picks the mode and table log for codes and appends the table
// description. maxLog is 9 for literal and match lengths, 8 for offsets.
// counted, when not nil, holds the codes' counts already.
func (c *seqCoder) plan(dst []byte, codes []uint8, alphabet, maxLog int, counted *[64]uint32) (out []byte, mode byte) {
	c.count = append(c.count[:0], make([]uint32, alphabet)...)
	if counted != nil {
		copy(c.count, counted[:])
	} else {
		// Four tables, so that runs of one code do not wait on one counter.
		var part [4][64]uint32
		i := 0
		for ; i+4 <= len(codes); i += 4 {
			part[0][codes[i]&63]++
			part[1][codes[i+1]&63]++
			part[2][codes[i+2]&63]++
			part[3][codes[i+3]&63]++
		}
		for ; i < len(codes); i++ {
			part[0][codes[i]&63]++
		}
		for x := range c.count {
			c.count[x] = part[0][x] + part[1][x] + part[2][x] + part[3][x]
		}
	}
	maxSym := 0
	for x := range c.count {
		if c.count[x] != 0 {
			maxSym = x
		}
	}
	if int(c.count[codes[0]]) == len(codes) {
		c.rle = true
		c.t.setRLE()
		return append(dst, codes[0]), 1
	}
	c.rle = false
	log := tableLog(len(codes), maxSym, maxLog)
	c.n = append(c.n[:0], make([]int, alphabet)...)
	normalize(c.count, maxSym, log, c.n)
	c.t.build(c.n[:maxSym+1], uint(log))
	return appendNCount(dst, c.n, maxSym, log), 2
}

// tableLog is zstd's FSE_optimalTableLog: two bits under the source's size
// in bits, at least enough for the alphabet, within [5, maxLog].
func tableLog(n, maxSym, maxLog int) int {
	log := maxLog
	if b := highBit(uint32(n-1)) - 2; b < log {
		log = b
	}
	if b := min(highBit(uint32(n))+1, highBit(uint32(maxSym))+2); b > log {
		log = b
	}
	return max(5, min(log, maxLog))
}

// init and flush need no RLE case: the RLE table starts in state 0 and
// flushes log 0 bits.
func (c *seqCoder) init(s uint8) { c.st = c.t.init(int(s)) }

func (c *seqCoder) flush(w *bitWriter) { w.add(uint64(c.st), c.t.log) }

// seqWriter holds reusable scratch space for appendSequences.
type seqWriter struct {
	ll, ml, of    []uint8
	cll, cml, cof seqCoder
}

// seqCounts counts the sequences' literal length, match length and offset
// codes, as the windowed parse's assembly counts them while it parses.
type seqCounts struct{ ll, ml, of [64]uint32 }

// appendSequences appends a sequences section: the count, the modes byte,
// the three table descriptions (LL, OF, ML) and one backward bitstream,
// coded last sequence first.
func (sw *seqWriter) appendSequences(dst []byte, seqs []sequence) []byte {
	return sw.appendCodedSequences(dst, seqs, nil)
}

// appendCodedSequences is appendSequences for sequences whose codes are
// in sw.ll, sw.ml and sw.of already, counted in cnt; with cnt nil it works
// them out.
func (sw *seqWriter) appendCodedSequences(dst []byte, seqs []sequence, cnt *seqCounts) []byte {
	n := len(seqs)
	switch {
	case n < 128:
		dst = append(dst, byte(n))
	case n < 0x7F00:
		dst = append(dst, byte(n>>8)+0x80, byte(n))
	default:
		dst = append(dst, 0xFF, byte(n-0x7F00), byte((n-0x7F00)>>8))
	}
	if n == 0 {
		return dst
	}
	// The codes are written by index into slices sized beforehand, not
	// appended to sw's fields: the section took 11.7-12.0 ns a sequence
	// instead of 13.3-13.9 (BenchmarkSequencesSectionOfADimBlock, dev
	// machine, one core).
	var cll, cml, cof *[64]uint32
	if cnt == nil {
		ll := slices.Grow(sw.ll[:0], n)[:n]
		ml := slices.Grow(sw.ml[:0], n)[:n]
		of := slices.Grow(sw.of[:0], n)[:n]
		for i, q := range seqs {
			ll[i] = uint8(llCode(q.litLen))
			ml[i] = uint8(mlCode(q.matchLen))
			of[i] = uint8(highBit(q.offVal))
		}
		sw.ll, sw.ml, sw.of = ll, ml, of
	} else {
		sw.ll, sw.ml, sw.of = sw.ll[:n], sw.ml[:n], sw.of[:n]
		cll, cml, cof = &cnt.ll, &cnt.ml, &cnt.of
	}
	modes := len(dst)
	dst = append(dst, 0)
	var mll, mof, mml byte
	dst, mll = sw.cll.plan(dst, sw.ll, len(llBase), 9, cll)
	dst, mof = sw.cof.plan(dst, sw.of, 32, 8, cof)
	dst, mml = sw.cml.plan(dst, sw.ml, len(mlBase), 9, cml)
	dst[modes] = mll<<6 | mof<<4 | mml<<2

	w := bitWriter{out: dst}
	i := n - 1
	sw.cml.init(sw.ml[i])
	sw.cof.init(sw.of[i])
	sw.cll.init(sw.ll[i])
	addExtras(&w, seqs[i], int(sw.ll[i]), int(sw.ml[i]), int(sw.of[i]))
	sw.encodeStream(&w, seqs[:i])
	sw.cml.flush(&w)
	sw.cof.flush(&w)
	sw.cll.flush(&w)
	return w.close()
}

// encodeStream codes seqs, last first, after the stream's last sequence:
// per sequence the offset, match and literal length states, then the
// extra bits. Its loop (codeSeqs: codeSeqsGo, or the assembly of
// seq_amd64.s) is the sequences' hot loop: the accumulator lives in
// registers, and it is written out 8 bytes at a time, twice a sequence,
// whatever it holds, keeping the whole bytes and fewer than 8 bits
// pending: a flush that tests how full the accumulator is mispredicts
// about once a sequence. Between two flushes go at most 49 bits: the
// states (9+9+8) with the literal length's extra bits (≤ 16), then the
// match length's (≤ 16) with the offset's (≤ 31); with the 7 pending the
// word never fills, so no shift reaches 64.
func (sw *seqWriter) encodeStream(w *bitWriter, seqs []sequence) {
	out := slices.Grow(w.out, 12*len(seqs)+16)
	o := len(out)
	out = out[:cap(out)]
	acc, nb := w.acc, w.nbits
	// w holds fewer than 32 bits; whole bytes out, so that fewer than 8
	// stay.
	binary.LittleEndian.PutUint64(out[o:], acc)
	o += int(nb >> 3)
	acc >>= nb &^ 7
	nb &= 7
	o, acc, nb = sw.codeSeqs(out, o, acc, nb, seqs)
	w.out, w.acc, w.nbits = out[:o], acc, nb
}

// codeSeqsGo is encodeStream's loop in Go: it codes seqs into out from
// o, with acc and nb the bits pending, and returns them after the last.
// On amd64 the assembly of seq_amd64.s runs it (codeSeqs) and this one
// is its reference.
func (sw *seqWriter) codeSeqsGo(out []byte, o int, acc uint64, nb uint, seqs []sequence) (int, uint64, uint) {
	ll, ml, of := sw.ll[:len(seqs)], sw.ml[:len(seqs)], sw.of[:len(seqs)]
	// An RLE stream's table is the zero table: it writes no bits, so the
	// loop needs no branch for it.
	tof, tml, tll := &sw.cof.t, &sw.cml.t, &sw.cll.t
	sof, sml, sll := sw.cof.st, sw.cml.st, sw.cll.st
	for i := len(seqs) - 1; i >= 0; i-- {
		q := seqs[i]
		lc, mc, oc := ll[i]&63, ml[i]&63, uint(of[i]&31)
		// The three states' bits are gathered first and added to the
		// accumulator at once: one step of the chain through nb, not
		// three. Every shift is masked to its range, which spares the
		// compiler's check for shifts past the word.
		d := tof.sym[oc]
		k1 := (sof + d.deltaNbBits) >> 16 & 31
		bitsOut := uint64(sof & lowMask[k1])
		sof = uint32(tof.state[(int32(sof>>k1)+d.deltaFindState)&(fseMaxStates-1)])
		d = tml.sym[mc]
		k2 := (sml + d.deltaNbBits) >> 16 & 31
		bitsOut |= uint64(sml&lowMask[k2]) << k1
		sml = uint32(tml.state[(int32(sml>>k2)+d.deltaFindState)&(fseMaxStates-1)])
		d = tll.sym[lc]
		k3 := (sll + d.deltaNbBits) >> 16 & 31
		bitsOut |= uint64(sll&lowMask[k3]) << ((k1 + k2) & 63)
		sll = uint32(tll.state[(int32(sll>>k3)+d.deltaFindState)&(fseMaxStates-1)])
		k := uint(k1+k2+k3) & 63
		acc |= (bitsOut | uint64(q.litLen-llBase64[lc])<<k) << nb
		nb += k + uint(llBits64[lc])
		binary.LittleEndian.PutUint64(out[o:o+8], acc)
		o += int(nb >> 3)
		acc >>= nb &^ 7 & 63
		nb &= 7
		mb := uint(mlBits64[mc]) & 63
		acc |= (uint64(q.matchLen-mlBase64[mc]) | uint64(q.offVal&lowMask[oc])<<mb) << nb
		nb += mb + oc
		binary.LittleEndian.PutUint64(out[o:o+8], acc)
		o += int(nb >> 3)
		acc >>= nb &^ 7 & 63
		nb &= 7
	}
	sw.cof.st, sw.cml.st, sw.cll.st = sof, sml, sll
	return o, acc, nb
}

// lowMask[k] keeps the low k bits of a word: a load in codeSeqsGo where
// 1<<k - 1 would take the shift register that the loop's other shifts
// wait for (the assembly has BZHI for it).
var lowMask = func() (m [32]uint32) {
	for k := range m {
		m[k] = 1<<k - 1
	}
	return m
}()

// addExtras writes a sequence's extra bits in the order the decoder reads
// them backwards: offset, match length, literal length.
func addExtras(w *bitWriter, q sequence, ll, ml, of int) {
	w.add(uint64(q.litLen-llBase[ll]), uint(llBits[ll]))
	w.add(uint64(q.matchLen-mlBase[ml]), uint(mlBits[ml]))
	w.add(uint64(q.offVal), uint(of))
}
