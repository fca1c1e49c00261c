package corpus

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/zspool/zspool/internal/synth"
)

func TestThe12BitGeneratorsGiveNPixelsUnder4096(t *testing.T) {
	tests := []struct {
		name string
		gen  func(n int) []byte
	}{
		{"Gaussian12", func(n int) []byte { return Gaussian12(n, 4000, 200, 1) }},
		{"Uniform12", func(n int) []byte { return Uniform12(n, 1) }},
		{"Dim12", func(n int) []byte { return Dim12(n, 1) }},
		{"Bright12", func(n int) []byte { return Bright12(n, 1) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.gen(10001)
			if len(b) != 2*10001 {
				t.Fatalf("%d bytes for 10001 pixels", len(b))
			}
			for i := 0; i < len(b); i += 2 {
				if v := binary.LittleEndian.Uint16(b[i:]); v > 4095 {
					t.Fatalf("pixel %d is %d", i/2, v)
				}
			}
			if !bytes.Equal(b, tc.gen(10001)) {
				t.Fatal("two calls with one seed differ")
			}
		})
	}
}

func TestEveryRatioSetIs8MiB(t *testing.T) {
	for _, set := range RatioSets() {
		if len(set.Data) != RatioSetBytes {
			t.Errorf("%s: %d bytes", set.Name, len(set.Data))
		}
	}
}

// The bench mix must stay what `zspool bench` converts: frame i of kind
// synth.Mixed(i), seeded with i.
func TestTheBenchMixIsTheBenchsFrames(t *testing.T) {
	got := BenchMix(4)
	for i := range 4 {
		want := make([]byte, benchMixFrame)
		synth.FillFrame(want, synth.Mixed(int64(i)), uint64(i))
		if !bytes.Equal(got[i*benchMixFrame:(i+1)*benchMixFrame], want) {
			t.Fatalf("frame %d differs", i)
		}
	}
}

func TestCaseNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range append(Cases(), RatioSets()...) {
		if seen[c.Name] {
			t.Errorf("%q twice", c.Name)
		}
		seen[c.Name] = true
	}
}
