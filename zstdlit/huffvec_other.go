//go:build !amd64 || purego

package zstdlit

// hasLitBits and hasLitCodes: litBits and codeLitsWide have no portable
// form, as counting a histogram (h.cost) is as fast as summing the
// lengths a byte at a time, and codeLits is the byte loop.
const (
	hasLitBits  = false
	hasLitCodes = false
)

func (h *huffEnc) litBits(lits []byte) (int, bool) { panic("zstdlit: litBits without hasLitBits") }

func (h *huffEnc) codeLitsWide(out []byte, o int, lits []byte) (int, uint64, uint, int) {
	panic("zstdlit: codeLitsWide without hasLitCodes")
}
