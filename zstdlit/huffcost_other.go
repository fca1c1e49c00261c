//go:build !amd64 || purego

package zstdlit

// hasLitBits: litBits has no portable form, as counting a histogram
// (h.cost) is as fast as summing the lengths a byte at a time.
const hasLitBits = false

func (h *huffEnc) litBits(lits []byte) (int, bool) { panic("zstdlit: litBits without hasLitBits") }
