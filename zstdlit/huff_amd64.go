//go:build amd64 && !purego

package zstdlit

// The literals' loop in assembly on amd64: Go compiled codeLitsGo to about
// 10 instructions a literal, moving the bit count in and out of the shift
// register at every write; the assembly keeps it there and takes about
// 8, the same bits (TestTheLiteralsAssemblyWritesWhatGoWrites).

// huffAsm is encodeLitsAMD64's argument block. The assembly addresses its
// fields by offset (the test checks them).
type huffAsm struct {
	wp      *byte        // 0: the next 8 bytes are written here
	acc, nb uint64       // 8, 16: out, the bits pending and their count
	lits    *byte        // 24
	n       int          // 32: in, the literals; out, those left (fewer than 5)
	code    *[256]uint64 // 40
	nbBits  *[256]uint8  // 48
	written int          // 56: out, the bytes written
}

//go:noescape
func encodeLitsAMD64(a *huffAsm)

// codeLits is codeLitsGo in assembly (the same arguments and results).
func (h *huffEnc) codeLits(out []byte, o int, lits []byte) (int, uint64, uint, int) {
	n := len(lits)
	if n < 5 {
		return o, 0, 0, n
	}
	if !hasBMI2 {
		return h.codeLitsGo(out, o, lits)
	}
	_ = out[o+n*MaxHuffBits/8+7] // the assembly's writes stay inside out
	a := huffAsm{wp: &out[o], lits: &lits[0], n: n, code: &h.code64, nbBits: &h.nbBits}
	encodeLitsAMD64(&a)
	return o + a.written, a.acc, uint(a.nb), a.n
}
