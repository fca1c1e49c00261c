package zstdlit

import (
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/zspool/zspool/zstdlit/corpus"
)

// TestRatioSideBySideWithKlauspost prints the compression ratio of zstdlit
// (the seeded parse, the engines' segmented encoder) and of klauspost SpeedFastest + WithAllLitEntropyCompression on
// corpus.RatioSets (three 12-bit synthetic signals and the bench mix) in
// 128 KiB chunks (one frame per chunk). It reports the figures and asserts
// only that every frame decodes.
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
	for _, set := range corpus.RatioSets() {
		var ours, theirs int
		var frame, kframe []byte
		for off := 0; off < len(set.Data); off += chunk {
			c := set.Data[off:min(off+chunk, len(set.Data))]
			frame = Encode(frame[:0], c, Options{})
			got, err := decoder.DecodeAll(frame, nil)
			if err != nil || string(got) != string(c) {
				t.Fatalf("%s: chunk at %d does not round-trip: %v", set.Name, off, err)
			}
			ours += len(frame)
			kframe = kl.EncodeAll(c, kframe[:0])
			theirs += len(kframe)
		}
		rl := float64(len(set.Data)) / float64(ours)
		rk := float64(len(set.Data)) / float64(theirs)
		t.Logf("%-18s %10d %8d %.3fx %8d %.3fx %7.2f%%", set.Name, len(set.Data),
			ours, rl, theirs, rk, 100*(rl/rk-1))
	}
}

func BenchmarkEncode128KiBChunks(b *testing.B) {
	for _, set := range corpus.RatioSets() {
		b.Run(set.Name, func(b *testing.B) {
			b.SetBytes(int64(len(set.Data)))
			var dst []byte
			for b.Loop() {
				for off := 0; off < len(set.Data); off += 128 << 10 {
					dst = Encode(dst[:0], set.Data[off:min(off+128<<10, len(set.Data))], Options{})
				}
			}
		})
	}
}
