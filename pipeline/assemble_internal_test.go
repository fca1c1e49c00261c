package pipeline

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestCopyRowPutsEveryChunkInOrderAcrossBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	noise := make([]byte, 3*blockSize/2)
	_, _ = rand.NewChaCha8([32]byte{7}).Read(noise)
	for trial := range 20 {
		var chunks []ChunkOut
		var want []byte
		for range rng.IntN(12) + 1 {
			var d []byte // nil: an absent chunk
			if rng.IntN(5) != 0 {
				off := rng.IntN(len(noise))
				d = noise[off : off+rng.IntN(len(noise)-off)]
			}
			chunks = append(chunks, ChunkOut{Data: d})
			want = append(want, d...)
		}
		blocks := make([][]byte, (len(want)+blockSize-1)/blockSize)
		for i := range blocks {
			blocks[i] = make([]byte, blockSize)
		}
		copyRow(blocks, chunks, len(want))
		got := make([]byte, 0, len(want))
		for _, b := range blocks {
			got = append(got, b[:min(blockSize, len(want)-len(got))]...)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("trial %d: %d chunks, %d bytes: the blocks do not hold the row in order", trial, len(chunks), len(want))
		}
	}
}
