package zstdlit

import (
	"testing"

	"github.com/klauspost/compress/zstd"
)

type ratioSet struct {
	name string
	data []byte
}

func ratioSets() []ratioSet {
	const n = (8 << 20) / 2 // 8 MiB of uint16 per set
	return []ratioSet{
		{"dim sparse", dim12(n, 21)},
		{"bright shot-noise", bright12(n, 22)},
		{"uniform", uniform12(n, 23)},
	}
}

// TestRatioSideBySideWithKlauspost prints the compression ratio of zstdlit
// and of klauspost SpeedFastest + WithAllLitEntropyCompression on three
// 12-bit synthetic sets in 128 KiB chunks (one frame per chunk). It reports
// the figures and asserts only that every frame decodes.
func TestRatioSideBySideWithKlauspost(t *testing.T) {
	if testing.Short() {
		t.Skip("ratio comparison skipped in -short")
	}
	const chunk = 128 << 10
	kl, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithAllLitEntropyCompression(true), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer kl.Close()
	t.Logf("%-18s %10s %12s %12s %8s", "set (128 KiB)", "input", "zstdlit", "klauspost", "lit/kl")
	for _, set := range ratioSets() {
		var ours, theirs int
		var frame, kframe []byte
		for off := 0; off < len(set.data); off += chunk {
			c := set.data[off:min(off+chunk, len(set.data))]
			frame = Encode(frame[:0], c, Options{})
			got, err := decoder.DecodeAll(frame, nil)
			if err != nil || string(got) != string(c) {
				t.Fatalf("%s: chunk at %d does not round-trip: %v", set.name, off, err)
			}
			ours += len(frame)
			kframe = kl.EncodeAll(c, kframe[:0])
			theirs += len(kframe)
		}
		rl := float64(len(set.data)) / float64(ours)
		rk := float64(len(set.data)) / float64(theirs)
		t.Logf("%-18s %10d %8d %.3fx %8d %.3fx %7.2f%%", set.name, len(set.data),
			ours, rl, theirs, rk, 100*(rl/rk-1))
	}
}

func BenchmarkEncode128KiBChunks(b *testing.B) {
	for _, set := range ratioSets() {
		b.Run(set.name, func(b *testing.B) {
			b.SetBytes(int64(len(set.data)))
			var dst []byte
			for b.Loop() {
				for off := 0; off < len(set.data); off += 128 << 10 {
					dst = Encode(dst[:0], set.data[off:min(off+128<<10, len(set.data))], Options{})
				}
			}
		})
	}
}
