package cpu_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zarr"
	"github.com/zspool/zspool/zstdlit"
)

// forEachStoredFrame calls fn with every present chunk of level 0 of the
// encoderAcq dataset in dest: its padded bytes as the writer saw them and
// the frame stored for it.
func forEachStoredFrame(t *testing.T, dest string, raw []byte, fn func(c []int64, padded, stored []byte)) {
	t.Helper()
	ctx := context.Background()
	store := localfs.New(dest)
	a, err := zarr.OpenArray(ctx, store, "acq.ome.zarr/0")
	if err != nil {
		t.Fatal(err)
	}
	g := a.Grid
	frameBytes := a.FrameBytes()
	present := 0
	err = zarr.ForEach([]int64{g.Chunks(0), g.Chunks(1), g.Chunks(2)}, func(c []int64) error {
		entries, _, err := a.ReadIndex(ctx, g.ShardOf(c, nil))
		if err != nil {
			return err
		}
		e := entries[g.Slot(c)]
		if !e.Present() {
			return nil
		}
		stored, err := store.GetRange(ctx, a.ShardKey(g.ShardOf(c, nil)), int64(e.Offset), int64(e.NBytes))
		if err != nil {
			return err
		}
		f0 := c[0] * g.Chunk[0]
		frames := min(g.Chunk[0], g.Shape[0]-f0)
		padded := make([]byte, a.ChunkBytes())
		g.EpochBox(c, frames, a.Elem).Scatter(raw[f0*frameBytes:(f0+frames)*frameBytes], padded)
		present++
		fn(c, padded, stored)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if present == 0 {
		t.Fatal("no chunk is present: the case proves nothing")
	}
}

// hasChecksumFlag reports Content_Checksum_flag, bit 2 of the
// Frame_Header_Descriptor that follows the 4-byte magic (RFC 8878
// §3.1.1.1.1).
func hasChecksumFlag(frame []byte) bool { return len(frame) > 4 && frame[4]&0x04 != 0 }

func TestTheZstdChecksumOptionPutsAVerifiedChecksumInEveryFrameOfEitherEncoder(t *testing.T) {
	spool := t.TempDir()
	manifest, raw := encoderAcq(t, spool)
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	tests := []struct {
		name     string
		encoder  string
		checksum bool
	}{
		{"the default encoder with the checksum on", pipeline.EncoderDefault, true},
		{"klauspost with the checksum on", pipeline.EncoderKlauspost, true},
		{"lit with the checksum on", pipeline.EncoderLit, true},
		{"window with the checksum on", pipeline.EncoderWindow, true},
		{"the default encoder leaves it off", pipeline.EncoderDefault, false},
		{"klauspost with the checksum off", pipeline.EncoderKlauspost, false},
		{"lit with the checksum off", pipeline.EncoderLit, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dest := t.TempDir()
			convertWith(t, manifest, dest, pipeline.Options{ZstdEncoder: tc.encoder, ZstdChecksum: tc.checksum})
			forEachStoredFrame(t, dest, raw, func(c []int64, padded, stored []byte) {
				if got := hasChecksumFlag(stored); got != tc.checksum {
					t.Fatalf("chunk %v: Content_Checksum_flag is %v, want %v", c, got, tc.checksum)
				}
				if tc.encoder == pipeline.EncoderLit {
					if want := zstdlit.Encode(nil, padded, zstdlit.Options{Checksum: tc.checksum, ElemSize: 2}); !bytes.Equal(stored, want) {
						t.Fatalf("chunk %v: stored %d bytes differ from zstdlit's %d", c, len(stored), len(want))
					}
				}
				// klauspost verifies the checksum when the flag is set.
				got, err := dec.DecodeAll(stored, nil)
				if err != nil || !bytes.Equal(got, padded) {
					t.Fatalf("chunk %v does not decode to its padded bytes: %v", c, err)
				}
				if !tc.checksum {
					return
				}
				// A wrong checksum must fail the decode, or the decode
				// above proved nothing about it.
				bad := bytes.Clone(stored)
				bad[len(bad)-1] ^= 0xff
				if _, err := dec.DecodeAll(bad, nil); err == nil {
					t.Fatalf("chunk %v decodes with its checksum broken", c)
				}
			})
		})
	}
}
