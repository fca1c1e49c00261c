//go:build hostsim

package hostsim

import "testing"

// rfcDecode is RFC 8878 §3.1.1.5 from the decoder's side: the offset that
// Offset_Value ov stands for after a sequence whose literal length is 0
// when ll0, and the repeat history after it.
func rfcDecode(h [3]uint32, ov uint32, ll0 bool) (uint32, [3]uint32) {
	if ov > 3 {
		return ov - 3, [3]uint32{ov - 3, h[0], h[1]}
	}
	switch repeatIndex(ov, ll0) {
	case 0:
		return h[0], h
	case 1:
		return h[1], [3]uint32{h[1], h[0], h[2]}
	case 2:
		return h[2], [3]uint32{h[2], h[0], h[1]}
	}
	return h[0] - 1, [3]uint32{h[0] - 1, h[0], h[1]}
}

// repeatNeeds is how many of the history's entries a decoder reads for
// repeat code ov (1 to 3): the encoder may use it only when it knows them.
func repeatNeeds(ov uint32, ll0 bool) int {
	return [4]int{1, 2, 3, 1}[repeatIndex(ov, ll0)]
}

// TestTheParsesRepeatCodesAreTheRFCsSmallestForTheKnownHistory checks the
// CUDA source's zl_rep_code over every small history, every count of known
// entries, both kinds of literal length and every offset near the
// entries: the Offset_Value it picks must decode, by the RFC, to the
// offset, be the smallest repeat code that does with the entries the
// segment knows (the reference zstdlit's choice), or the full offset when
// none does, and leave the history and its count as the decoder's moves.
func TestTheParsesRepeatCodesAreTheRFCsSmallestForTheKnownHistory(t *testing.T) {
	cases := 0
	for k := 0; k <= 3; k++ {
		for _, ll0 := range []bool{false, true} {
			for h0 := uint32(1); h0 <= 5; h0++ {
				for h1 := uint32(1); h1 <= 5; h1++ {
					for h2 := uint32(1); h2 <= 5; h2++ {
						for off := uint32(1); off <= 7; off++ {
							hist := [3]uint32{h0, h1, h2}
							want := off + 3
							for ov := uint32(1); ov <= 3; ov++ {
								if got, _ := rfcDecode(hist, ov, ll0); repeatNeeds(ov, ll0) <= k && got == off {
									want = ov
									break
								}
							}
							_, wantHist := rfcDecode(hist, want, ll0)
							// The first entry, or a swap of the first two, keeps
							// the entries known; any other puts a new one in front.
							wantKnown := min(k+1, 3)
							if want <= 3 && repeatIndex(want, ll0) <= 1 {
								wantKnown = k
							}
							gotHist, gotKnown := hist, k
							got := RepCode(&gotHist, &gotKnown, off, ll0)
							cases++
							if got != want || gotHist != wantHist || gotKnown != wantKnown {
								t.Fatalf("known %d, ll0 %v, history %v, offset %d: Offset_Value %d, history %v, known %d; want %d, %v, %d",
									k, ll0, hist, off, got, gotHist, gotKnown, want, wantHist, wantKnown)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d cases", cases)
}

// repeatIndex is the history entry repeat code ov (1 to 3) reads, 3 for
// the first entry minus one.
func repeatIndex(ov uint32, ll0 bool) int {
	if ll0 {
		return int(ov)
	}
	return int(ov) - 1
}
