//go:build amd64 && !purego

package zstdlit

import "golang.org/x/sys/cpu"

// The sequences' loop in assembly on amd64. Go compiled codeSeqsGo to
// about 159 instructions a sequence (cachegrind, dim camera frames), a
// third of them spills and reloads around the one register that holds a
// shift's count; the assembly writes the same bits in about 90, its
// values in registers and its shifts BMI2's. It adds each state's bits
// and each extra field to the accumulator in turn where codeSeqsGo
// gathers them first: the same bits at the same places.
// TestTheSequencesAssemblyWritesWhatGoWrites holds the two to the same
// bytes.

// hasBMI2 says whether the sequences' and literals' assembly may run:
// they shift with BMI2's SHLX, SHRX and BZHI, which every x86-64 core
// since 2013 has (Haswell, Excavator); older ones run the Go loops.
var hasBMI2 = cpu.X86.HasBMI2

// seqAsm is encodeSeqsAMD64's argument block. The assembly addresses its
// fields, fseTable's and sequence's by offset (the test checks them).
type seqAsm struct {
	wp            *byte     // 0: the next 8 bytes are written here
	acc, nb       uint64    // 8, 16: the bits pending and their count
	seqs          *sequence // 24
	ll, ml, of    *uint8    // 32, 40, 48: the codes, one a sequence
	n             int       // 56: the sequences, coded from n-1 down to 0
	tof, tml, tll *fseTable // 64, 72, 80
	sof, sml, sll uint64    // 88, 96, 104: the states, in and out
	written       int       // 112: the bytes the assembly wrote, out
}

//go:noescape
func encodeSeqsAMD64(a *seqAsm)

// codeSeqs is codeSeqsGo in assembly (the same arguments and results).
// out must hold 12 bytes a sequence and 8 more past o, as encodeStream
// grows it.
func (sw *seqWriter) codeSeqs(out []byte, o int, acc uint64, nb uint, seqs []sequence) (int, uint64, uint) {
	n := len(seqs)
	if n == 0 {
		return o, acc, nb
	}
	if !hasBMI2 {
		return sw.codeSeqsGo(out, o, acc, nb, seqs)
	}
	_ = out[o+12*n+7] // the assembly's writes stay inside out
	_, _, _ = sw.ll[n-1], sw.ml[n-1], sw.of[n-1]
	a := seqAsm{
		wp: &out[o], acc: acc, nb: uint64(nb),
		seqs: &seqs[0], ll: &sw.ll[0], ml: &sw.ml[0], of: &sw.of[0], n: n,
		tof: &sw.cof.t, tml: &sw.cml.t, tll: &sw.cll.t,
		sof: uint64(sw.cof.st), sml: uint64(sw.cml.st), sll: uint64(sw.cll.st),
	}
	encodeSeqsAMD64(&a)
	sw.cof.st, sw.cml.st, sw.cll.st = uint32(a.sof), uint32(a.sml), uint32(a.sll)
	return o + a.written, a.acc, uint(a.nb)
}
