package zstdlit

import (
	"testing"

	"github.com/zspool/zspool/internal/synth"
	"github.com/zspool/zspool/zstdlit/corpus"
)

func TestRepeatCodesFollowTheDecodersHistory(t *testing.T) {
	tests := []struct {
		name     string
		hist     [3]uint32
		known    int
		off      uint32
		ll0      bool
		wantOV   uint32
		wantHist [3]uint32
		wantKnow int
	}{
		{"an offset with nothing known is explicit", [3]uint32{}, 0, 9, false, 12, [3]uint32{9, 0, 0}, 1},
		{"the last offset again is repeat 1", [3]uint32{9, 0, 0}, 1, 9, false, 1, [3]uint32{9, 0, 0}, 1},
		{"the second offset is repeat 2 and moves first", [3]uint32{9, 4, 0}, 2, 4, false, 2, [3]uint32{4, 9, 0}, 2},
		{"the third offset is repeat 3 and moves first", [3]uint32{9, 4, 7}, 3, 7, false, 3, [3]uint32{7, 9, 4}, 3},
		{"an unknown third slot is never used", [3]uint32{9, 4, 7}, 2, 7, false, 10, [3]uint32{7, 9, 4}, 3},
		{"after no literals, the second offset is code 1", [3]uint32{9, 4, 7}, 3, 4, true, 1, [3]uint32{4, 9, 7}, 3},
		{"after no literals, the third offset is code 2", [3]uint32{9, 4, 7}, 3, 7, true, 2, [3]uint32{7, 9, 4}, 3},
		{"after no literals, the last offset minus one is code 3", [3]uint32{9, 4, 7}, 3, 8, true, 3, [3]uint32{8, 9, 4}, 3},
		{"after no literals, the last offset itself is explicit", [3]uint32{9, 4, 7}, 3, 9, true, 12, [3]uint32{9, 9, 4}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, k := tc.hist, tc.known
			ov := repCode(&h, &k, tc.off, tc.ll0)
			if ov != tc.wantOV || h != tc.wantHist || k != tc.wantKnow {
				t.Fatalf("got ov %d hist %v known %d, want %d %v %d", ov, h, k, tc.wantOV, tc.wantHist, tc.wantKnow)
			}
		})
	}
}

// The GPU kernels are held to zstdlit's bytes on corpus.Cases, so the
// corpus must reach every case of the sequences coder.
func TestTheCorpusReachesEveryPartOfTheSequencesCoder(t *testing.T) {
	reached := map[string]int{}
	var e encoder
	e.p.setRung(Options{})
	for _, tc := range corpus.Cases() {
		for off := 0; off < len(tc.Data); off += MaxBlockSize {
			blk := tc.Data[off:min(off+MaxBlockSize, len(tc.Data))]
			if len(blk) < MinHuffLiterals {
				continue
			}
			lits, _ := e.matches(blk, 0, len(blk))
			if len(e.p.seqs) == 0 {
				continue
			}
			if len(lits) == len(blk) {
				reached["matches that do not pay (whole block as literals)"]++
				continue
			}
			reached["blocks with sequences"]++
			for _, q := range e.p.seqs {
				switch {
				case q.offVal > 3:
					reached["explicit offsets"]++
				case q.litLen == 0:
					reached["repeat code "+string(rune('0'+q.offVal))+" after no literals"]++
				default:
					reached["repeat code "+string(rune('0'+q.offVal))]++
				}
				if q.litLen > SegmentSize {
					reached["literal lengths carried across segments"]++
				}
			}
			for name, c := range map[string]*seqCoder{"literal lengths": &e.sw.cll, "offsets": &e.sw.cof, "match lengths": &e.sw.cml} {
				if c.rle {
					reached["RLE mode for "+name]++
				} else {
					reached["FSE tables for "+name]++
				}
			}
		}
	}
	for _, want := range []string{
		"matches that do not pay (whole block as literals)", "blocks with sequences", "explicit offsets",
		"repeat code 1", "repeat code 2", "repeat code 3",
		"repeat code 1 after no literals", "repeat code 2 after no literals", "repeat code 3 after no literals",
		"literal lengths carried across segments",
		"RLE mode for literal lengths", "RLE mode for offsets", "RLE mode for match lengths",
		"FSE tables for literal lengths", "FSE tables for offsets", "FSE tables for match lengths",
	} {
		if reached[want] == 0 {
			t.Errorf("no corpus case reaches %q", want)
		}
	}
	t.Logf("%v", reached)
}

// BenchmarkSequencesSectionOfADimBlock codes the sequences the windowed
// parse finds in the first 128 KiB block of a chunk of dim camera frames
// (about 12,000: the densest of the camera sets, where the section is a
// third of the encoder's time), reporting the cost of a sequence.
//
//	go test -run '^$' -bench SequencesSection -cpu 1 ./zstdlit
func BenchmarkSequencesSectionOfADimBlock(b *testing.B) {
	ch := synth.CameraDim(1024, 1024).ZarrChunks()[0]
	e := new(windowEncoder)
	opt, maxOff := e.start(ch, WindowOptionsFor(1, 2).withDefaults()) // as EncodeWindow readies a frame
	e.parseWindow(ch, 0, MaxBlockSize, maxOff, opt)
	seqs := e.wseqs
	if len(seqs) < 1000 {
		b.Fatalf("%d sequences in a dim block: not the dense case this measures", len(seqs))
	}
	var sw seqWriter
	var dst []byte
	for b.Loop() {
		dst = sw.appendSequences(dst[:0], seqs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(seqs)), "ns/seq")
	b.ReportMetric(float64(len(seqs)), "seqs")
}
