//go:build !amd64 || purego

package zstdlit

// hasLitBits: litBits and codeLitsWide have no portable form, as counting
// a histogram (h.cost) is as fast as summing the lengths a byte at a time,
// and codeLits is the byte loop.
const hasLitBits = false

// litBits is h.cost over lits' histogram where there is no assembly for it
// (appendLiterals counts the histogram itself, and never calls this).
func (h *huffEnc) litBits(lits []byte) (int, bool) {
	var hist [histTables][256]uint32
	return h.cost(histogram(&hist, lits))
}

// codeLitsWide is codeLits where there is no assembly for it.
func (h *huffEnc) codeLitsWide(out []byte, o int, lits []byte) (int, uint64, uint, int) {
	return h.codeLits(out, o, lits)
}
