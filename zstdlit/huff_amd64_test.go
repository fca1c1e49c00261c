//go:build amd64 && !purego

package zstdlit

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"
)

func TestTheLiteralsAssemblysOffsetsAreTheGoTypes(t *testing.T) {
	var a huffAsm
	got := []uintptr{unsafe.Offsetof(a.wp), unsafe.Offsetof(a.acc), unsafe.Offsetof(a.nb), unsafe.Offsetof(a.lits),
		unsafe.Offsetof(a.n), unsafe.Offsetof(a.code), unsafe.Offsetof(a.nbBits), unsafe.Offsetof(a.written)}
	sameOffsets(t, "huff_amd64.s", got, []uintptr{0, 8, 16, 24, 32, 40, 48, 56})
}

func TestTheLiteralsAssemblyWritesWhatGoWrites(t *testing.T) {
	if !hasBMI2 {
		t.Skip("this core lacks BMI2: codeLits runs its Go reference, which it would be compared with")
	}
	r := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{0, 4, 5, 6, 9, 10, 11, 1023, 1024, 32768, 131072} {
		for _, alphabet := range []int{2, 16, 200, 256} {
			lits := skewedLits(r, n, alphabet)
			var hist [histTables][256]uint32
			h := tableOf(*histogram(&hist, lits))
			out := make([]byte, n*MaxHuffBits/8+32)
			gout := make([]byte, n*MaxHuffBits/8+32)
			o, acc, nb, left := h.codeLits(out, 3, lits)
			g, gacc, gnb, gleft := h.codeLitsGo(gout, 3, lits)
			if o != g || acc != gacc || nb != gnb || left != gleft || !bytes.Equal(out[:o+8], gout[:g+8]) {
				t.Fatalf("%d literals of %d symbols: the assembly stopped at %d, pending %#x/%d, %d left; Go at %d, %#x/%d, %d left",
					n, alphabet, o, acc, nb, left, g, gacc, gnb, gleft)
			}
		}
	}
}

// skewedLits is n literals of alphabet symbols, skewed so that their code
// lengths run from 1 to 11 bits.
func skewedLits(r *rand.Rand, n, alphabet int) []byte {
	lits := make([]byte, n)
	for i := range lits {
		lits[i] = byte(min(r.IntN(alphabet), r.IntN(alphabet), r.IntN(alphabet)))
	}
	return lits
}

// tableOf is a Huffman table for counts, with symbols 0 and 1 counted once
// more where fewer than two are present (a table needs two).
func tableOf(counts [256]uint32) *huffEnc {
	present := 0
	for _, c := range counts {
		if c != 0 {
			present++
		}
	}
	if present < 2 {
		counts[0], counts[1] = counts[0]+1, counts[1]+1
	}
	var h huffEnc
	var nbBits [256]uint8
	h.pm.lengths(&counts, MaxHuffBits, &nbBits)
	h.setLengths(&nbBits)
	return &h
}
