//go:build !amd64 || purego

package zstdlit

// codeSeqs is codeSeqsGo where there is no assembly for it.
func (sw *seqWriter) codeSeqs(out []byte, o int, acc uint64, nb uint, seqs []sequence) (int, uint64, uint) {
	return sw.codeSeqsGo(out, o, acc, nb, seqs)
}
