//go:build amd64 && !purego

package zstdlit

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"
)

func TestTheSequencesAssemblysOffsetsAreTheGoTypes(t *testing.T) {
	var a seqAsm
	var tab fseTable
	got := []uintptr{
		unsafe.Offsetof(a.wp), unsafe.Offsetof(a.acc), unsafe.Offsetof(a.nb), unsafe.Offsetof(a.seqs),
		unsafe.Offsetof(a.ll), unsafe.Offsetof(a.ml), unsafe.Offsetof(a.of), unsafe.Offsetof(a.n),
		unsafe.Offsetof(a.tof), unsafe.Offsetof(a.tml), unsafe.Offsetof(a.tll),
		unsafe.Offsetof(a.sof), unsafe.Offsetof(a.sml), unsafe.Offsetof(a.sll), unsafe.Offsetof(a.written),
		unsafe.Offsetof(tab.state), unsafe.Offsetof(tab.sym), unsafe.Sizeof(fseSym{}),
		unsafe.Offsetof(fseSym{}.deltaFindState), unsafe.Sizeof(tab.state[0]),
		unsafe.Sizeof(sequence{}), unsafe.Offsetof(sequence{}.matchLen), unsafe.Offsetof(sequence{}.offVal),
	}
	want := []uintptr{0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 8, 1032, 8, 4, 2, 12, 4, 8}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("offset %d is %d, the assembly (seq_amd64.s) takes %d", i, got[i], want[i])
		}
	}
}

// randomSequences is n sequences whose lengths and offsets reach every
// code: mostly short, as on camera data, some up to the longest lengths
// and offsets a block can hold, and repeat codes.
func randomSequences(r *rand.Rand, n int) []sequence {
	seqs := make([]sequence, n)
	for i := range seqs {
		q := &seqs[i]
		switch r.IntN(8) {
		case 0:
			q.litLen, q.matchLen, q.offVal = r.Uint32N(1<<17), 3+r.Uint32N(1<<17-3), 4+r.Uint32N(1<<31-4)
		case 1:
			q.litLen, q.matchLen, q.offVal = r.Uint32N(4), 3+r.Uint32N(8), 1+r.Uint32N(3)
		default:
			q.litLen, q.matchLen, q.offVal = r.Uint32N(40), 3+r.Uint32N(60), 4+r.Uint32N(1<<r.IntN(22))
		}
	}
	return seqs
}

func TestTheSequencesAssemblyWritesWhatGoWrites(t *testing.T) {
	if !hasBMI2 {
		t.Skip("this core lacks BMI2: codeSeqs runs its Go reference, which it would be compared with")
	}
	r := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{1, 2, 3, 17, 500, 11803, 30000} {
		for rep := range 4 {
			seqs := randomSequences(r, n)
			if rep == 3 { // one code for every sequence: RLE tables
				for i := range seqs {
					seqs[i] = sequence{litLen: 2, matchLen: 9, offVal: 1}
				}
			}
			// appendSequences leaves the codes and tables of seqs in
			// sw; the states are set again as it sets them before its
			// loop.
			var sw seqWriter
			sw.appendSequences(nil, seqs)
			last := n - 1
			sw.cml.init(sw.ml[last])
			sw.cof.init(sw.of[last])
			sw.cll.init(sw.ll[last])
			gsw := sw
			acc, nb := r.Uint64()&0x7F, uint(r.IntN(8))
			acc &= 1<<nb - 1
			out := make([]byte, 12*n+64)
			gout := make([]byte, 12*n+64)
			o, a, b := sw.codeSeqs(out, 5, acc, nb, seqs[:last])
			go_, ga, gb := gsw.codeSeqsGo(gout, 5, acc, nb, seqs[:last])
			if o != go_ || a != ga || b != gb || !bytes.Equal(out[:o+8], gout[:go_+8]) {
				t.Fatalf("%d sequences (case %d): the assembly wrote %d bytes, pending %#x/%d; Go %d, %#x/%d; bytes equal %v",
					n, rep, o-5, a, b, go_-5, ga, gb, bytes.Equal(out[:o], gout[:go_]))
			}
			if sw.cof.st != gsw.cof.st || sw.cml.st != gsw.cml.st || sw.cll.st != gsw.cll.st {
				t.Fatalf("%d sequences (case %d): final states %d %d %d, Go's %d %d %d", n, rep,
					sw.cof.st, sw.cml.st, sw.cll.st, gsw.cof.st, gsw.cml.st, gsw.cll.st)
			}
		}
	}
}
