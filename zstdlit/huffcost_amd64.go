//go:build amd64 && !purego

package zstdlit

import "golang.org/x/sys/cpu"

// hasLitBits says whether litBits may run: it looks code lengths up with
// AVX-512 VBMI's byte permutes (Ice Lake, Sapphire Rapids, Zen 4 and
// later).
var hasLitBits = cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VBMI

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
