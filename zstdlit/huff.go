package zstdlit

import (
	"encoding/binary"
	"slices"
	"sort"
)

// huffEnc holds one block's Huffman table and reusable scratch space.
type huffEnc struct {
	nbBits [256]uint8  // code length per symbol, 0 when absent
	code   [256]uint16 // canonical code per symbol
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

// packageMerge computes optimal code lengths under a length limit.
type packageMerge struct {
	nodes []pmNode
	leafs []int32
	cur   []int32
	next  []int32
	pkgs  []int32
}

type pmNode struct {
	w    uint64
	sym  int32 // leaf symbol, or -1 for a package
	a, b int32 // children of a package
}

// lengths fills nbBits for the symbols with a nonzero count (at least two),
// optimal under the limit maxBits, and returns the longest length.
func (p *packageMerge) lengths(hist *[256]uint32, maxBits int, nbBits *[256]uint8) int {
	p.nodes = p.nodes[:0]
	p.leafs = p.leafs[:0]
	for s, c := range hist {
		nbBits[s] = 0
		if c != 0 {
			p.nodes = append(p.nodes, pmNode{w: uint64(c), sym: int32(s), a: -1, b: -1})
			p.leafs = append(p.leafs, int32(len(p.nodes)-1))
		}
	}
	// Leaves by increasing count, ties by symbol.
	sort.SliceStable(p.leafs, func(i, j int) bool {
		return p.nodes[p.leafs[i]].w < p.nodes[p.leafs[j]].w
	})
	n := len(p.leafs)
	p.cur = append(p.cur[:0], p.leafs...)
	for level := 1; level < maxBits; level++ {
		p.pkgs = p.pkgs[:0]
		for i := 0; i+1 < len(p.cur); i += 2 {
			a, b := p.cur[i], p.cur[i+1]
			p.nodes = append(p.nodes, pmNode{w: p.nodes[a].w + p.nodes[b].w, sym: -1, a: a, b: b})
			p.pkgs = append(p.pkgs, int32(len(p.nodes)-1))
		}
		// Merge leaves and packages; a leaf goes first on equal weight.
		p.next = p.next[:0]
		i, j := 0, 0
		for i < n || j < len(p.pkgs) {
			if j == len(p.pkgs) || (i < n && p.nodes[p.leafs[i]].w <= p.nodes[p.pkgs[j]].w) {
				p.next = append(p.next, p.leafs[i])
				i++
			} else {
				p.next = append(p.next, p.pkgs[j])
				j++
			}
		}
		p.cur, p.next = p.next, p.cur
	}
	for _, id := range p.cur[:2*n-2] {
		p.count(id, nbBits)
	}
	longest := 0
	for _, l := range nbBits {
		longest = max(longest, int(l))
	}
	return longest
}

func (p *packageMerge) count(id int32, nbBits *[256]uint8) {
	for {
		nd := &p.nodes[id]
		if nd.sym >= 0 {
			nbBits[nd.sym]++
			return
		}
		p.count(nd.a, nbBits)
		id = nd.b
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
}

// appendStream writes lits as one Huffman-coded backward bitstream: the last
// literal first, so that the decoder reads the first literal first.
//
// It is the literals' hot loop: the accumulator lives in locals and is
// written 8 bytes at a time, keeping under 8 bits pending, so that four
// codes of at most 11 bits fit between two writes.
func (h *huffEnc) appendStream(dst, lits []byte) []byte {
	out := slices.Grow(dst, len(lits)*MaxHuffBits/8+16)
	o := len(out)
	out = out[:cap(out)]
	var acc uint64
	var nb uint
	code, nbBits := &h.code, &h.nbBits
	i := len(lits)
	for ; i >= 4; i -= 4 {
		s0, s1, s2, s3 := lits[i-1], lits[i-2], lits[i-3], lits[i-4]
		acc |= uint64(code[s0]) << nb
		nb += uint(nbBits[s0])
		acc |= uint64(code[s1]) << nb
		nb += uint(nbBits[s1])
		acc |= uint64(code[s2]) << nb
		nb += uint(nbBits[s2])
		acc |= uint64(code[s3]) << nb
		nb += uint(nbBits[s3])
		binary.LittleEndian.PutUint64(out[o:], acc)
		o += int(nb >> 3)
		acc >>= nb &^ 7
		nb &= 7
	}
	w := bitWriter{out: out[:o], acc: acc, nbits: nb}
	for i--; i >= 0; i-- {
		s := lits[i]
		w.add(uint64(code[s]), uint(nbBits[s]))
	}
	return w.close()
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
	return h.appendLiteralsWithTable(dst, lits)
}

func (h *huffEnc) appendLiteralsWithTable(dst, lits []byte) ([]byte, bool) {
	n := len(lits)
	four := n > 1023
	hdrSize := 3
	if four {
		hdrSize = 5 // reserve the largest header, move the body if smaller
	}
	start := len(dst)
	dst = append(dst, make([]byte, hdrSize)...)
	dst, ok := h.appendTreeDesc(dst)
	if !ok {
		return dst[:start], false
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
		hdr, size = 2|0<<2|uint64(n)<<4|uint64(comp)<<14, 3
	case n <= 0x3FFF && comp <= 0x3FFF:
		hdr, size = 2|2<<2|uint64(n)<<4|uint64(comp)<<18, 4
	case n <= 0x3FFFF && comp <= 0x3FFFF:
		hdr, size = 2|3<<2|uint64(n)<<4|uint64(comp)<<22, 5
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
