package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zarr"
	"github.com/zspool/zspool/zstdlit"
	"github.com/zspool/zspool/zstdlit/corpus"
)

func TestAnUnknownZstdEncoderFlagIsBadUsageNamingTheFlag(t *testing.T) {
	for _, cmd := range []string{"convert", "bench"} {
		t.Run(cmd, func(t *testing.T) {
			args := []string{cmd, "--zstd-encoder", "fast"}
			if cmd == "convert" {
				args = append(args, "acq.json", "--dest", t.TempDir())
			}
			_, _, err := zspool(t, args...)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), `--zstd-encoder: "fast" is not one of "klauspost", "window", "segmented" (or "lit", its old name`) {
				t.Fatalf("err = %v, want exit 2 naming --zstd-encoder, the value and the choices", err)
			}
		})
	}
}

func TestTheDaemonConfigsZstdEncoderReachesTheDaemonOptions(t *testing.T) {
	for _, enc := range []string{pipeline.EncoderDefault, pipeline.EncoderKlauspost, pipeline.EncoderWindow, pipeline.EncoderSegmented, pipeline.EncoderLit} {
		doc := "spool_dir: /s\nstate_dir: /t\ndestination:\n  url: /d\n"
		if enc != "" {
			doc += "zstd_encoder: " + enc + "\n"
		}
		c, err := config.ParseDaemon([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		o, err := daemonOptions(c)
		if err != nil || o.ZstdEncoder != enc {
			t.Errorf("zstd_encoder %q: daemon options carry %q (%v)", enc, o.ZstdEncoder, err)
		}
	}
}

// cameraAcq is 12-bit camera data, one signal per frame of side×side
// uint16: gaussian noise, a dim sparse frame, a frame of one byte value
// (RLE blocks), bright shot noise, fill (absent chunks) and uniform noise,
// in turn. With big, the values are stored big-endian.
func cameraAcq(name string, frames, side int64, chunk, shard []int64, big bool) *acquisition {
	a := newAcquisition(name, "uint16", []dimSpec{
		{frames, chunk[0], shard[0]}, {side, chunk[1], shard[1]}, {side, chunk[2], shard[2]},
	})
	n := int(side * side)
	for f := range frames {
		var fr []byte
		switch f % 6 {
		case 0:
			fr = corpus.Gaussian12(n, 1500, 40, uint64(f))
		case 1:
			fr = corpus.Dim12(n, uint64(f))
		case 2:
			fr = bytes.Repeat([]byte{7}, 2*n) // 0x0707: one byte value
		case 3:
			fr = corpus.Bright12(n, uint64(f))
		case 4:
			fr = make([]byte, 2*n)
		default:
			fr = corpus.Uniform12(n, uint64(f))
		}
		a.raw = append(a.raw, fr...)
	}
	if big {
		a.manifest["byte_order"] = "big"
		for i := 0; i < len(a.raw); i += 2 {
			binary.BigEndian.PutUint16(a.raw[i:], binary.LittleEndian.Uint16(a.raw[i:]))
		}
	}
	return a
}

// blockCounts are the zstd blocks of a dataset's stored chunks, by type;
// compressed blocks by their literals' stream count.
type blockCounts struct{ raw, rle, oneStream, fourStreams int }

// checkLitChunks checks that every stored chunk of level 0 is exactly
// zstdlit's frame of its decoded bytes at opt (so it was written by the
// segmented encoder, not merely decodable), and counts the block types.
func checkLitChunks(t *testing.T, dest, dataset string, opt zstdlit.Options, counts *blockCounts) {
	t.Helper()
	forEachStoredChunk(t, dest, dataset, func(where string, arr arrayOf, stored, chunk []byte) {
		opt.ElemSize, opt.BigEndian = arr.elem, arr.big // the array's, as the engines take them
		if want := zstdlit.Encode(nil, chunk, opt); !bytes.Equal(stored, want) {
			t.Fatalf("%s: %d stored bytes are not zstdlit's %d", where, len(stored), len(want))
		}
		countBlocks(stored[zstdlit.FrameHeaderSize(len(chunk)):], counts)
	})
}

// forEachStoredChunk calls f with every present chunk of a local dataset's
// level 0: where it is (for messages), its stored bytes and their decoding.
// arrayOf is what the engines take from a stored chunk's array for its
// encoder: the element size and the byte order.
type arrayOf struct {
	elem int
	big  bool
}

func forEachStoredChunk(t *testing.T, dest, dataset string, f func(where string, arr arrayOf, stored, chunk []byte)) {
	t.Helper()
	ctx := context.Background()
	store := localfs.New(dest)
	a, err := zarr.OpenArray(ctx, store, dataset+"/0")
	if err != nil {
		t.Fatal(err)
	}
	shards := make([]int64, a.Grid.Rank())
	for d := range shards {
		shards[d] = a.Grid.Shards(d)
	}
	err = zarr.ForEach(shards, func(sh []int64) error {
		entries, _, err := a.ReadIndex(ctx, sh)
		if err != nil {
			return err
		}
		for s, e := range entries {
			if !e.Present() {
				continue
			}
			stored, err := store.GetRange(ctx, a.ShardKey(sh), int64(e.Offset), int64(e.NBytes))
			if err != nil {
				return err
			}
			chunk, err := a.DecodeChunk(stored, nil)
			if err != nil {
				return fmt.Errorf("shard %v slot %d: %w", sh, s, err)
			}
			f(fmt.Sprintf("%s shard %v slot %d", dataset, sh, s), arrayOf{a.Elem, a.Endian == "big"}, stored, chunk)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// countBlocks walks a frame's blocks (RFC 8878 §3.1.1.2); zstdlit writes
// no checksum unless asked.
func countBlocks(b []byte, counts *blockCounts) {
	for len(b) >= 3 {
		h := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
		last, typ, size := h&1 == 1, h>>1&3, int(h>>3)
		b = b[3:]
		switch typ {
		case 0:
			counts.raw++
		case 1:
			counts.rle++
			size = 1
		case 2:
			// Literals_Section_Header: Size_Format 00 is one stream.
			if len(b) > 0 && b[0]>>2&3 == 0 {
				counts.oneStream++
			} else {
				counts.fourStreams++
			}
		}
		b = b[min(size, len(b)):]
		if last {
			return
		}
	}
}

// CI runs this with ZSPOOL_REQUIRE_INTEROP=1, so an independent reader
// (zarrita.js) must open what zstdlit writes: FSE-coded sequences, Huffman
// literals in one and four streams, RLE and raw blocks, multi-block
// frames, every dtype size, levels 1 and 3.
func TestLiteralsOnlyOutputConvertsVerifiesAndReadsBackInZarrita(t *testing.T) {
	spool, dest := t.TempDir(), t.TempDir()
	acqs := []*acquisition{
		// 128 KiB chunks, as the bench and most cameras have them.
		cameraAcq("camera_le", 6, 512, []int64{1, 256, 256}, []int64{2, 2, 2}, false),
		// 300 KiB chunks: three blocks, the last short; ragged in y and x.
		cameraAcq("camera_be_ragged", 6, 700, []int64{2, 256, 300}, []int64{1, 2, 2}, true),
	}
	// Level 3: the parse's strong rung.
	l3 := cameraAcq("camera_le_l3", 6, 512, []int64{2, 256, 256}, []int64{2, 2, 2}, false)
	l3.manifest["compression"] = map[string]any{"codec": "zstd", "level": 3}
	acqs = append(acqs, l3)
	seed := uint64(100)
	for _, c := range []struct {
		shape, dtype string
		big          bool
	}{
		{"ragged_everywhere", "uint8", false},
		{"inner_not_multiple", "float64", true},
		{"grid_not_multiple_of_shard", "int32", false},
		{"four_d_channels", "int8", false},
		{"one_element", "uint64", false},
		{"one_d", "int16", false},
	} {
		for _, sh := range issueShapes {
			if sh.name != c.shape {
				continue
			}
			a := newAcquisition(c.shape+"_"+c.dtype, c.dtype, sh.dims)
			if c.big {
				a.manifest["byte_order"] = "big"
			}
			seed++
			a.randomRaw(seed, elems(sh.dims))
			acqs = append(acqs, a)
		}
	}
	var cases []interopCase
	var counts blockCounts
	for i, a := range acqs {
		mp := a.write(t, spool)
		ds := a.name + ".ome.zarr"
		raw := filepath.Join(spool, a.name+".raw")
		enc := pipeline.EncoderSegmented
		if i == 0 {
			enc = pipeline.EncoderLit // the old name still works
		}
		t.Run(a.name, func(t *testing.T) {
			if _, stderr, err := zspool(t, "convert", mp, "--dest", dest, "--zstd-encoder", enc, "--quiet"); err != nil {
				t.Fatalf("convert: %v\n%s", err, stderr)
			}
			out, stderr, err := zspool(t, "verify", filepath.Join(dest, ds), "--raw", raw, "--quiet")
			if err != nil || !strings.Contains(out, "equals the raw file") {
				t.Fatalf("verify: %v\n%s%s", err, out, stderr)
			}
			compression, _ := a.manifest["compression"].(map[string]any)
			level, _ := compression["level"].(int)
			checkLitChunks(t, dest, ds, zstdlit.Options{Level: level}, &counts)
		})
		cases = append(cases, interopCase{Dataset: filepath.Join(dest, ds), Raw: raw})
	}
	// Without all three kinds of block the interop check below would
	// prove less than it claims.
	if counts.raw == 0 || counts.rle == 0 || counts.oneStream == 0 || counts.fourStreams == 0 {
		t.Fatalf("blocks written: %+v; want raw, RLE and Huffman blocks of one and of four streams", counts)
	}
	t.Logf("blocks written: %+v", counts)
	checkWithZarrita(t, cases)
}

// The windowed encoder (the CPU engine's default) is
// read by zarrita and verified against the raw file at every rung of its
// ladder, with matches reaching back across blocks and repeat offsets
// carried over from one block to the next.
func TestWindowOutputAtEveryLevelVerifiesAndReadsBackInZarrita(t *testing.T) {
	spool, dest := t.TempDir(), t.TempDir()
	var cases []interopCase
	var counts blockCounts
	for _, level := range []int{1, 3} {
		for _, a := range []*acquisition{
			cameraAcq(fmt.Sprintf("camera_le_l%d", level), 6, 512, []int64{2, 256, 256}, []int64{2, 2, 2}, false),
			cameraAcq(fmt.Sprintf("camera_be_ragged_l%d", level), 6, 700, []int64{2, 256, 300}, []int64{1, 2, 2}, true),
		} {
			a.manifest["compression"] = map[string]any{"codec": "zstd", "level": level}
			mp := a.write(t, spool)
			ds := a.name + ".ome.zarr"
			raw := filepath.Join(spool, a.name+".raw")
			t.Run(a.name, func(t *testing.T) {
				if _, stderr, err := zspool(t, "convert", mp, "--dest", dest, "--engine", "cpu", "--zstd-encoder", pipeline.EncoderWindow, "--quiet"); err != nil {
					t.Fatalf("convert: %v\n%s", err, stderr)
				}
				out, stderr, err := zspool(t, "verify", filepath.Join(dest, ds), "--raw", raw, "--quiet")
				if err != nil || !strings.Contains(out, "equals the raw file") {
					t.Fatalf("verify: %v\n%s%s", err, out, stderr)
				}
				forEachStoredChunk(t, dest, ds, func(where string, arr arrayOf, stored, chunk []byte) {
					if want := zstdlit.EncodeWindow(nil, chunk, zstdlit.WindowOptionsFor(level, arr.elem)); !bytes.Equal(stored, want) {
						t.Fatalf("%s: %d stored bytes are not the windowed encoder's %d", where, len(stored), len(want))
					}
					countBlocks(stored[zstdlit.FrameHeaderSize(len(chunk)):], &counts)
				})
			})
			cases = append(cases, interopCase{Dataset: filepath.Join(dest, ds), Raw: raw})
		}
	}
	// 12-bit noise still compresses, so no block here is stored raw (the
	// zstdlit tests cover matches into raw blocks).
	if counts.rle == 0 || counts.oneStream == 0 || counts.fourStreams == 0 {
		t.Fatalf("blocks written: %+v; want RLE and Huffman blocks of one and of four streams", counts)
	}
	t.Logf("blocks written: %+v", counts)
	checkWithZarrita(t, cases)
}

func TestTheBenchHeaderNamesTheEncoderInEffect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"the CPU engine's own", nil, "codec zstd level 1, encoder window (the default)\n"},
		{"one named by the flag", []string{"--zstd-encoder", "klauspost"}, "codec zstd level 1, encoder klauspost\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "--engine", "cpu", "--size", "1MiB", "--frame", "256", "--chunk", "64"}, tc.extra...)
			out, stderr, err := zspool(t, args...)
			if err != nil {
				t.Fatalf("bench: %v\n%s", err, stderr)
			}
			if !strings.Contains(out, tc.want) {
				t.Fatalf("the header does not say %q:\n%s", tc.want, out)
			}
		})
	}
}
