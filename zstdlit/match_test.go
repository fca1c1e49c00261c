package zstdlit

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zspool/zspool/internal/synth"
	"github.com/zspool/zspool/zstdlit/corpus"
)

func TestTheSeededParseRoundTripsEveryCorpusCaseAndCamera(t *testing.T) {
	for _, tc := range corpus.Cases() {
		for _, mm := range []int{0, 6, 8} {
			decodes(t, tc.Data, Options{Seeded: true, MinMatch: mm})
		}
	}
	for _, cam := range synth.Cameras(256, 256) {
		for _, ch := range cameraChunks(cam) {
			decodes(t, ch, Options{Seeded: true, MinMatch: MinMatchFor(cam.ElemSize())})
		}
	}
}

// noise is n bytes that no parse finds a match in, seeded by seed.
func noise(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestASeededMatchReachesBackToAnEarlierSegment(t *testing.T) {
	// Segments 0 and 2 hold the same noise, segment 1 other noise: only a
	// match reaching two segments back finds segment 2's bytes.
	a := noise(SegmentSize, 1)
	blk := append(append(append([]byte(nil), a...), noise(SegmentSize, 2)...), a...)
	for _, tc := range []struct {
		name   string
		seeded bool
		want   uint32 // the offset of the match covering segment 2; 0 for none
	}{
		{"the segmented parse finds nothing", false, 0},
		{"the seeded parse finds segment 0", true, 2 * SegmentSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p parser
			p.minMatch, p.seeded = uint32(seedMinMatch), tc.seeded
			p.parseBlock(blk)
			var got uint32
			covered := 0
			for _, s := range p.seqs {
				if s.offVal > 3 {
					got = s.offVal - 3
				}
				covered += int(s.matchLen)
			}
			if got != tc.want {
				t.Fatalf("offset %d, want %d (%d sequences)", got, tc.want, len(p.seqs))
			}
			if tc.seeded && covered != SegmentSize {
				t.Fatalf("the matches cover %d bytes, want the whole segment's %d", covered, SegmentSize)
			}
			decodes(t, blk, Options{Seeded: tc.seeded})
		})
	}
}

func TestTheSeedHoldsOnlyEarlierSegments(t *testing.T) {
	// Segment 0 is noise that segment 1 repeats: segment 0 must not see
	// segment 1's positions (a forward offset does not decode) and its
	// own parse finds nothing.
	a := noise(SegmentSize, 3)
	blk := append(append([]byte(nil), a...), a...)
	var p parser
	p.seeded = true
	p.parseBlock(blk)
	if len(p.seqs) != 1 || p.seqs[0].litLen != SegmentSize || p.seqs[0].offVal != SegmentSize+3 {
		t.Fatalf("sequences %+v, want one match of segment 1 against segment 0 after %d literals", p.seqs, SegmentSize)
	}
}

func TestTheSegmentsOwnMatchIsAskedBeforeTheSeeds(t *testing.T) {
	// Segment 1 repeats 12 bytes of its own (offset 100) that segment 0
	// holds 40 bytes of: the segment's own 12-byte match wins although the
	// seed's is longer.
	seg0 := noise(SegmentSize, 4)
	seg1 := noise(SegmentSize, 5)
	copy(seg1[300:340], seg0[500:540])
	copy(seg1[200:212], seg0[500:512])
	blk := append(append([]byte(nil), seg0...), seg1...)
	var p parser
	p.seeded = true
	p.parseBlock(blk)
	var got [][2]uint32
	for _, s := range p.seqs {
		got = append(got, [2]uint32{s.offVal - 3, s.matchLen})
	}
	// The first copy can only come from segment 0 (offset 724). The second
	// matches the first (offset 100, 12 bytes) before the seed is asked,
	// and the seed gives the rest from segment 0 (28 bytes).
	want := [][2]uint32{{724, 12}, {100, 12}, {824, 28}}
	if !slices.Equal(got, want) {
		t.Fatalf("(offset, length) %v, want %v", got, want)
	}
	decodes(t, blk, Options{Seeded: true})
}

func TestSeededMatchesAreAtLeastTheMinimum(t *testing.T) {
	for _, mm := range []int{0, 6, 8} {
		var p parser
		p.minMatch, p.seeded = uint32(Options{MinMatch: mm}.ShortestMatch()), true
		want := uint32(max(mm, seedMinMatch))
		seqs := 0
		for _, tc := range corpus.Cases() {
			for off := 0; off < len(tc.Data); off += MaxBlockSize {
				blk := tc.Data[off:min(off+MaxBlockSize, len(tc.Data))]
				p.parseBlock(blk)
				for _, s := range p.seqs {
					if s.matchLen < want {
						t.Fatalf("MinMatch %d: %s holds a match of %d bytes", mm, tc.Name, s.matchLen)
					}
				}
				seqs += len(p.seqs)
			}
		}
		if seqs == 0 {
			t.Fatalf("MinMatch %d: no sequences at all", mm)
		}
	}
}

// The seeded parse's bytes are the contract with the GPU kernels that will
// run it, as TestTheOutputBytesAreFixed is the segmented parse's.
func TestTheSeededOutputBytesAreFixed(t *testing.T) {
	h := sha256.New()
	for _, tc := range corpus.Cases() {
		h.Write(Encode(nil, tc.Data, Options{Seeded: true}))
		h.Write(Encode(nil, tc.Data, Options{Seeded: true, MinMatch: 8}))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != "fd437135161bc305ea8d05a92a55272b13a751d42cd16dd3a53bed17f55e3c88" {
		t.Fatalf("the corpus encodes to different bytes: sha256 %s", got)
	}
}
