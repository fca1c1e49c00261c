package zstdlit

import (
	"encoding/binary"
	"slices"
)

// huffEnc holds one block's Huffman table and reusable scratch space.
type huffEnc struct {
	nbBits [256]uint8  // code length per symbol, 0 when absent
	code   [256]uint16 // canonical code per symbol
	code64 [256]uint64 // code as the word appendStream shifts: no unpacking a literal
	lo, hi [256]uint8  // code's low and high bytes, as codeLitsWide looks them up
	maxSym int         // largest present symbol
	maxBit int         // longest code length
	pm     packageMerge
}

// bitWriter writes a zstd backward bitstream: values are added from the
// least significant bit up; close adds the final 1 bit and pads to a byte.
type bitWriter struct {
	out   []byte
	acc   uint64
	nbits uint
}

// add appends the n (≤ 32) low bits of v.
func (w *bitWriter) add(v uint64, n uint) {
	w.acc |= (v & (1<<n - 1)) << w.nbits
	w.nbits += n
	if w.nbits >= 32 {
		w.out = binary.LittleEndian.AppendUint32(w.out, uint32(w.acc))
		w.acc >>= 32
		w.nbits -= 32
	}
}

func (w *bitWriter) close() []byte {
	w.add(1, 1)
	for ; w.nbits > 0; w.nbits -= min(w.nbits, 8) {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
	}
	w.acc = 0
	return w.out
}

// packageMerge computes optimal code lengths under a length limit by
// package-merge, keeping weights only. The items chosen from each list are
// a prefix of it, and the leaves in a list keep their order, so a leaf's
// length is the number of lists whose chosen prefix holds it: a walk down
// the lists with each leaf's position in each is all the bookkeeping
// needed, not a tree of packages (the GPU's huffman_lengths, in
// kernels/zstdlit_plan.cuh, works the same way).
type packageMerge struct {
	key     [256]uint64 // count<<8 | symbol, for the sort
	sorted  [256]uint64 // the radix sort's other buffer
	leafW   [256]uint64 // leaf weights, by (count, symbol)
	pk      [256]uint64 // a list's packages
	lists   [2][512]uint64
	leafPos [maxPMLists + 1][256]uint16 // leaf i's position in list k
	lcount  [maxPMLists + 1]int         // leaves chosen from list k
}

// maxPMLists bounds the length limit packageMerge takes.
const maxPMLists = 30

// lengths fills nbBits for the symbols with a nonzero count (at least two,
// and no more than 2^maxBits), optimal under the limit maxBits (at most
// maxPMLists), and returns the longest length.
func (p *packageMerge) lengths(hist *[256]uint32, maxBits int, nbBits *[256]uint8) int {
	maxBits = min(maxBits, maxPMLists)
	n := 0
	for s, c := range hist {
		nbBits[s] = 0
		if c != 0 {
			p.key[n] = uint64(c)<<8 | uint64(s)
			n++
		}
	}
	// Leaves by increasing count, ties by symbol.
	p.sortKeys(n)
	for i, k := range p.key[:n] {
		p.leafW[i] = k >> 8
	}
	leafW := p.leafW[:n]
	cur, next := &p.lists[0], &p.lists[1]
	copy(cur[:], leafW)
	m := n
	for k := 2; k <= maxBits; k++ {
		np := m / 2
		pk := p.pk[:np]
		for i := range pk {
			pk[i] = cur[2*i] + cur[2*i+1]
		}
		// Merge leaves and packages; a leaf goes first on equal weight.
		pos := &p.leafPos[k]
		i, j, o := 0, 0, 0
		for i < n && j < np {
			if leafW[i] <= pk[j] {
				pos[i] = uint16(o)
				next[o] = leafW[i]
				i++
			} else {
				next[o] = pk[j]
				j++
			}
			o++
		}
		for ; i < n; i, o = i+1, o+1 {
			pos[i] = uint16(o)
			next[o] = leafW[i]
		}
		o += copy(next[o:], pk[j:])
		cur, next = next, cur
		m = o
	}
	// The last list's first 2n−2 items are chosen; below, the items that
	// make up the chosen packages.
	chosen := 2*n - 2
	for k := maxBits; k >= 2; k-- {
		// The leaves' positions in a list increase: the chosen ones are
		// those before the first at or past the cut.
		pos := p.leafPos[k][:n]
		lo, hi := 0, n
		for lo < hi {
			if mid := int(uint(lo+hi) >> 1); int(pos[mid]) < chosen {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		p.lcount[k] = lo
		chosen = 2 * (chosen - lo)
	}
	p.lcount[1] = chosen
	// Leaf i's length is the number of lists whose chosen prefix is
	// longer than i: how many prefixes end at each leaf, summed on.
	var ends [257]int
	for k := 1; k <= maxBits; k++ {
		ends[min(p.lcount[k], n)]++
	}
	longest, ended := 0, 0
	for i, key := range p.key[:n] {
		ended += ends[i]
		l := maxBits - ended
		nbBits[uint8(key)] = uint8(l)
		longest = max(longest, l)
	}
	return longest
}

// sortKeys sorts p.key[:n] (count<<8 | symbol, in increasing symbol order)
// by count, ties kept in symbol order: a stable radix sort on the count's
// bytes, two or three passes for a block's counts. A comparison sort took
// a third of lengths' time on bright camera literals (pprof, dev machine).
func (p *packageMerge) sortKeys(n int) {
	var most uint64
	for _, k := range p.key[:n] {
		most = max(most, k)
	}
	src, dst := &p.key, &p.sorted
	for shift := uint(8); shift < 64 && most>>shift != 0; shift += 8 {
		var at [256]int
		for _, k := range src[:n] {
			at[byte(k>>shift)]++
		}
		sum := 0
		for d, c := range at {
			at[d] = sum
			sum += c
		}
		for _, k := range src[:n] {
			d := byte(k >> shift)
			dst[at[d]] = k
			at[d]++
		}
		src, dst = dst, src
	}
	if src != &p.key {
		copy(p.key[:n], src[:n])
	}
}

// setLengths installs code lengths (0 = absent; at least two present, a
// complete code) and assigns the canonical codes of RFC 8878 §4.2.1.3.
func (h *huffEnc) setLengths(nbBits *[256]uint8) {
	h.nbBits = *nbBits
	h.maxBit, h.maxSym = 0, 0
	for s, l := range nbBits {
		if l != 0 {
			h.maxBit = max(h.maxBit, int(l))
			h.maxSym = s
		}
	}
	// Weight w = maxBit+1-len; ranks start at the smallest weight.
	next := uint32(0)
	for l := h.maxBit; l >= 1; l-- {
		w := uint(h.maxBit + 1 - l)
		for s := 0; s <= h.maxSym; s++ {
			if int(nbBits[s]) == l {
				h.code[s] = uint16(next >> (w - 1))
				next += 1 << (w - 1)
			}
		}
	}
	for s, c := range h.code {
		h.code64[s] = uint64(c)
		h.lo[s], h.hi[s] = uint8(c), uint8(c>>8)
	}
}

// appendStream writes lits as one Huffman-coded backward bitstream: the last
// literal first, so that the decoder reads the first literal first.
func (h *huffEnc) appendStream(dst, lits []byte) []byte {
	out := slices.Grow(dst, len(lits)*MaxHuffBits/8+16)
	o, acc, nb, i := h.codeLitsWide(out[:cap(out)], len(out), lits)
	w := bitWriter{out: out[:o], acc: acc, nbits: nb}
	for i--; i >= 0; i-- {
		s := lits[i]
		w.add(uint64(h.code[s]), uint(h.nbBits[s]))
	}
	return w.close()
}

// addCode adds literal s's code to acc at bit nb and counts its bits
// (inlined: the loop below stays unrolled).
func addCode(acc uint64, nb uint, code *[256]uint64, nbBits *[256]uint8, s byte) (uint64, uint) {
	return acc | code[s]<<(nb&63), nb + uint(nbBits[s])
}

// codeLitsGo codes lits into out from o, the last literal first, five at
// a time while five are left, and returns where it stopped, the bits
// pending and how many literals are left (fewer than five). It is the
// literals' hot loop (codeLits: this, or the assembly of huff_amd64.s):
// the accumulator lives in registers and is written 8 bytes at a time,
// keeping under 8 bits pending, so that five codes of at most 11 bits (62
// bits with the 7) fit between two writes: a write and its bookkeeping
// cost as many instructions as two codes. out must hold 11 bits a
// literal and 8 bytes more past o.
func (h *huffEnc) codeLitsGo(out []byte, o int, lits []byte) (int, uint64, uint, int) {
	var acc uint64
	var nb uint
	code, nbBits := &h.code64, &h.nbBits
	i := len(lits)
	for ; i >= 5; i -= 5 {
		acc, nb = addCode(acc, nb, code, nbBits, lits[i-1])
		acc, nb = addCode(acc, nb, code, nbBits, lits[i-2])
		acc, nb = addCode(acc, nb, code, nbBits, lits[i-3])
		acc, nb = addCode(acc, nb, code, nbBits, lits[i-4])
		acc, nb = addCode(acc, nb, code, nbBits, lits[i-5])
		binary.LittleEndian.PutUint64(out[o:o+8], acc)
		o += int(nb >> 3)
		acc >>= nb &^ 7 & 63
		nb &= 7
	}
	return o, acc, nb, i
}

// weights returns the weights of symbols 0..maxSym-1 (the last is implied).
func (h *huffEnc) weights(out []byte) []byte {
	out = out[:0]
	for s := 0; s < h.maxSym; s++ {
		var w byte
		if h.nbBits[s] != 0 {
			w = byte(h.maxBit + 1 - int(h.nbBits[s]))
		}
		out = append(out, w)
	}
	return out
}

// appendTreeDesc appends the Huffman tree description, or reports false when
// none can be made.
func (h *huffEnc) appendTreeDesc(dst []byte) ([]byte, bool) {
	var wbuf [256]byte
	ws := h.weights(wbuf[:])
	fse, fseOK := fseCompressWeights(ws)
	fseOK = fseOK && len(fse) <= 127 // the header byte must stay below 128
	direct := len(ws) <= 128
	directSize := 1 + (len(ws)+1)/2
	if fseOK && (!direct || 1+len(fse) <= directSize) {
		dst = append(dst, byte(len(fse)))
		return append(dst, fse...), true
	}
	if !direct {
		return dst, false
	}
	dst = append(dst, byte(127+len(ws)))
	for i := 0; i < len(ws); i += 2 {
		b := ws[i] << 4
		if i+1 < len(ws) {
			b |= ws[i+1]
		}
		dst = append(dst, b)
	}
	return dst, true
}

// appendLiterals appends a Compressed_Literals_Block section for lits
// (len ≥ MinHuffLiterals, at least two distinct bytes), or reports false.
func (h *huffEnc) appendLiterals(dst, lits []byte, hist *[256]uint32) ([]byte, bool) {
	var nb [256]uint8
	h.pm.lengths(hist, MaxHuffBits, &nb)
	h.setLengths(&nb)
	return h.appendLiteralsWithTable(dst, lits, false)
}

// cost is how many bits h's table takes for literals counted in hist, or
// false when one of them has no code in it.
func (h *huffEnc) cost(hist *[256]uint32) (int, bool) {
	bits := 0
	for s, c := range hist {
		if c != 0 {
			if h.nbBits[s] == 0 {
				return 0, false
			}
			bits += int(c) * int(h.nbBits[s])
		}
	}
	return bits, true
}

// appendLiteralsWithTable appends lits coded with h's table: a
// Compressed_Literals_Block, which carries the table's description, or,
// with treeless, a Treeless_Literals_Block, which the decoder codes with
// the table of the frame's last Huffman-coded literals section (RFC 8878,
// 3.1.1.3.1.1); false when the table cannot be described or the sizes do
// not fit the header.
func (h *huffEnc) appendLiteralsWithTable(dst, lits []byte, treeless bool) ([]byte, bool) {
	n := len(lits)
	four := n > 1023
	hdrSize := 3
	if four {
		hdrSize = 5 // reserve the largest header, move the body if smaller
	}
	start := len(dst)
	dst = append(dst, make([]byte, hdrSize)...)
	typ := uint64(3)
	if !treeless {
		var ok bool
		if dst, ok = h.appendTreeDesc(dst); !ok {
			return dst[:start], false
		}
		typ = 2
	}
	if !four {
		dst = h.appendStream(dst, lits)
	} else {
		seg := (n + 3) / 4
		jt := len(dst)
		dst = append(dst, 0, 0, 0, 0, 0, 0)
		for i := 0; i < 4; i++ {
			s0 := len(dst)
			dst = h.appendStream(dst, lits[min(i*seg, n):min((i+1)*seg, n)])
			if i < 3 {
				sz := len(dst) - s0
				if sz > 0xFFFF {
					return dst[:start], false
				}
				binary.LittleEndian.PutUint16(dst[jt+2*i:], uint16(sz))
			}
		}
	}
	comp := len(dst) - start - hdrSize
	var hdr uint64
	var size int
	switch {
	case !four:
		if comp > 1023 {
			return dst[:start], false
		}
		hdr, size = typ|0<<2|uint64(n)<<4|uint64(comp)<<14, 3
	case n <= 0x3FFF && comp <= 0x3FFF:
		hdr, size = typ|2<<2|uint64(n)<<4|uint64(comp)<<18, 4
	case n <= 0x3FFFF && comp <= 0x3FFFF:
		hdr, size = typ|3<<2|uint64(n)<<4|uint64(comp)<<22, 5
	default:
		return dst[:start], false
	}
	if size < hdrSize {
		copy(dst[start+size:], dst[start+hdrSize:])
		dst = dst[:len(dst)-(hdrSize-size)]
	}
	for i := 0; i < size; i++ {
		dst[start+i] = byte(hdr >> (8 * i))
	}
	return dst, true
}

// appendLiteralsSection appends the smallest literals section for lits:
// RLE when they hold one distinct byte, Huffman-coded when that is possible
// and smaller than raw, raw otherwise.
func (h *huffEnc) appendLiteralsSection(dst, lits []byte, hist *[256]uint32) []byte {
	n := len(lits)
	if n > 0 && hist[lits[0]] == uint32(n) {
		return append(appendRawLitHeader(dst, 1, n), lits[0])
	}
	rawSize := rawLitHeaderSize(n) + n
	if n >= MinHuffLiterals {
		start := len(dst)
		if out, ok := h.appendLiterals(dst, lits, hist); ok && len(out)-start < rawSize {
			return out
		}
		dst = dst[:start]
	}
	return append(appendRawLitHeader(dst, 0, n), lits...)
}

func rawLitHeaderSize(n int) int {
	switch {
	case n < 32:
		return 1
	case n < 4096:
		return 2
	}
	return 3
}

// appendRawLitHeader writes a Raw (typ 0) or RLE (typ 1) literals header
// for n regenerated bytes.
func appendRawLitHeader(dst []byte, typ, n int) []byte {
	switch rawLitHeaderSize(n) {
	case 1:
		return append(dst, byte(typ|n<<3))
	case 2:
		h := typ | 1<<2 | n<<4
		return append(dst, byte(h), byte(h>>8))
	}
	h := typ | 3<<2 | n<<4
	return append(dst, byte(h), byte(h>>8), byte(h>>16))
}
