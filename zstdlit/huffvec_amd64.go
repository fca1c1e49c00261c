//go:build amd64 && !purego

package zstdlit

import "golang.org/x/sys/cpu"

// The literals' Huffman work in AVX-512 on amd64: a 256-entry table of
// bytes fits four vector registers, and VPERMT2B looks up 64 literals in
// it in two instructions, where a scalar loop loads them one by one.

// hasLitBits says whether litBits may run: it looks code lengths up with
// AVX-512 VBMI's byte permutes (Ice Lake, Sapphire Rapids, Zen 4 and
// later). hasLitCodes says whether codeLitsWide may: it shifts with BMI2
// besides.
var (
	hasLitBits  = cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VBMI
	hasLitCodes = hasLitBits && hasBMI2
)

// litBitsAsm is litBitsAVX512's argument block; the assembly addresses its
// fields by offset (the test checks them).
type litBitsAsm struct {
	lits   *byte       // 0
	n      int         // 8: a multiple of 64
	nbBits *[256]uint8 // 16
	sums   [8]uint64   // 24: out, the lengths' sums by lane
	least  [64]uint8   // 88: out, the least length by lane
}

//go:noescape
func litBitsAVX512(a *litBitsAsm)

// litBits returns the bits lits take coded with h's table, and false
// where a literal has no code in it (only where hasLitBits): the
// same answer as h.cost over lits' histogram, without the histogram. A
// block that reuses the decoder's table (treeless) needs no more of its
// literals than that sum, and counting a histogram costs a store a byte
// where this costs a few instructions every 64.
func (h *huffEnc) litBits(lits []byte) (int, bool) {
	a := litBitsAsm{n: len(lits) &^ 63, nbBits: &h.nbBits}
	bits := 0
	if a.n > 0 {
		a.lits = &lits[0]
		litBitsAVX512(&a)
		for _, s := range a.sums {
			bits += int(s)
		}
		for _, l := range a.least {
			if l == 0 {
				return 0, false
			}
		}
	}
	for _, c := range lits[a.n:] {
		l := h.nbBits[c]
		if l == 0 {
			return 0, false
		}
		bits += int(l)
	}
	return bits, true
}

// huffWideAsm is encodeLitsWide's argument block; the assembly addresses
// its fields, and huffEnc's tables, by offset (the test checks them).
type huffWideAsm struct {
	wp      *byte      // 0: the next 8 bytes are written here
	acc, nb uint64     // 8, 16: out, the bits pending and their count
	lits    *byte      // 24
	n       int        // 32
	h       *huffEnc   // 40
	written int        // 48: out, the bytes written
	scratch [64]uint64 // 56: two rounds' quads, each followed by their lengths
}

//go:noescape
func encodeLitsWide(a *huffWideAsm)

// codeLitsWide codes all of lits into out from o as codeLits does, the last
// literal first, and returns where it stopped, the bits pending and 0
// (no literal left); where hasLitCodes is false, it is codeLits. out must
// hold 11 bits a literal and 8 bytes more past o.
func (h *huffEnc) codeLitsWide(out []byte, o int, lits []byte) (int, uint64, uint, int) {
	if !hasLitCodes {
		return h.codeLits(out, o, lits)
	}
	n := len(lits)
	if n == 0 {
		return o, 0, 0, 0
	}
	_ = out[o+n*MaxHuffBits/8+7] // the assembly's writes stay inside out
	a := huffWideAsm{wp: &out[o], lits: &lits[0], n: n, h: h}
	encodeLitsWide(&a)
	return o + a.written, a.acc, uint(a.nb), 0
}
