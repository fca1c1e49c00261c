//go:build !amd64 || purego

package zstdlit

// codeLits is codeLitsGo where there is no assembly for it.
func (h *huffEnc) codeLits(out []byte, o int, lits []byte) (int, uint64, uint, int) {
	return h.codeLitsGo(out, o, lits)
}
