//go:build amd64 && !purego

package zstdlit

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

func TestTheLiteralBitsAssemblysOffsetsAreTheGoTypes(t *testing.T) {
	var a litBitsAsm
	got := []uintptr{unsafe.Offsetof(a.lits), unsafe.Offsetof(a.n), unsafe.Offsetof(a.nbBits),
		unsafe.Offsetof(a.sums), unsafe.Offsetof(a.least)}
	sameOffsets(t, "huffvec_bits_amd64.s", got, []uintptr{0, 8, 16, 24, 88})
}

// sameOffsets fails t where the Go type's offsets (got) differ from those
// the assembly file asm addresses (want).
func sameOffsets(t *testing.T, asm string, got, want []uintptr) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("offset %d is %d, the assembly (%s) takes %d", i, got[i], asm, want[i])
		}
	}
}

func TestLitBitsCountsWhatTheHistogramsCostCounts(t *testing.T) {
	if !hasLitBits {
		t.Skip("this core lacks AVX-512 VBMI: the encoder counts a histogram instead, which is what litBits would be compared with")
	}
	r := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{1, 63, 64, 65, 127, 128, 1000, 4096, 131072} {
		for _, alphabet := range []int{2, 16, 128, 129, 256} {
			for _, missing := range []bool{false, true} {
				lits := skewedLits(r, n, alphabet)
				// The table is built for all but one present symbol's
				// literals when missing: that symbol has no code.
				var hist [histTables][256]uint32
				counts := *histogram(&hist, lits)
				if missing {
					counts[lits[r.IntN(n)]] = 0
				}
				h := tableOf(counts)
				want, wantOK := h.cost(histogram(&hist, lits))
				got, gotOK := h.litBits(lits)
				if got != want || gotOK != wantOK {
					t.Fatalf("%d literals of %d symbols (one without a code: %v): litBits %d, %v; the histogram's cost %d, %v",
						n, alphabet, missing, got, gotOK, want, wantOK)
				}
			}
		}
	}
}

func TestTheWideLiteralsAssemblysOffsetsAreTheGoTypes(t *testing.T) {
	var a huffWideAsm
	got := []uintptr{unsafe.Offsetof(a.wp), unsafe.Offsetof(a.acc), unsafe.Offsetof(a.nb), unsafe.Offsetof(a.lits),
		unsafe.Offsetof(a.n), unsafe.Offsetof(a.h), unsafe.Offsetof(a.written), unsafe.Offsetof(a.scratch)}
	want := []uintptr{0, 8, 16, 24, 32, 40, 48, 56}
	var h huffEnc
	got = append(got, unsafe.Offsetof(h.nbBits), unsafe.Offsetof(h.code64), unsafe.Offsetof(h.lo), unsafe.Offsetof(h.hi))
	want = append(want, 0, 768, 2816, 3072)
	sameOffsets(t, "huffvec_codes_amd64.s", got, want)
}

func TestTheWideLiteralsAssemblyWritesTheStreamTheByteLoopWrites(t *testing.T) {
	if !hasLitCodes {
		t.Skip("this core lacks AVX-512 VBMI: appendStream runs the byte loop, which the wide one would be compared with")
	}
	defer func(was bool) { hasLitCodes = was }(hasLitCodes)
	r := rand.New(rand.NewPCG(5, 9))
	for _, n := range []int{1, 5, 63, 64, 65, 127, 128, 129, 1000, 32768, 32769} {
		for _, alphabet := range []int{2, 16, 200, 256} {
			lits := skewedLits(r, n, alphabet)
			var hist [histTables][256]uint32
			h := tableOf(*histogram(&hist, lits))
			prefix := []byte{1, 2, 3}
			hasLitCodes = true
			wide := h.appendStream(slices.Clone(prefix), lits)
			hasLitCodes = false
			bytewise := h.appendStream(slices.Clone(prefix), lits)
			if !bytes.Equal(wide, bytewise) {
				t.Fatalf("%d literals of %d symbols (longest code %d bits): the wide loop wrote %d bytes, the byte loop %d, first difference at %d",
					n, alphabet, h.maxBit, len(wide), len(bytewise), firstDiff(wide, bytewise))
			}
		}
	}
}
