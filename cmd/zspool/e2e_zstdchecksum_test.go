package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zstdlit"
)

// checkChecksummedChunks checks that every stored chunk of level 0 has
// Content_Checksum_flag (bit 2 of the Frame_Header_Descriptor after the
// 4-byte magic) and ends with the low 4 bytes of its content's XXH64, the
// same 4 bytes zstdlit writes for those bytes; with lit, the whole frame
// must be zstdlit's. It returns the number of chunks checked.
func checkChecksummedChunks(t *testing.T, dest, dataset, encoder string) int {
	t.Helper()
	n := 0
	forEachStoredChunk(t, dest, dataset, func(where string, arr arrayOf, stored, chunk []byte) {
		if len(stored) < 9 || stored[4]&0x04 == 0 {
			t.Fatalf("%s: the frame has no Content_Checksum_flag", where)
		}
		// The reader's klauspost decoder checked the checksum already.
		want := zstdlit.Encode(nil, chunk, zstdlit.Options{Checksum: true, ElemSize: arr.elem, BigEndian: arr.big})
		if !bytes.Equal(stored[len(stored)-4:], want[len(want)-4:]) {
			t.Fatalf("%s: the frame ends with % x, not its content's XXH64 % x", where, stored[len(stored)-4:], want[len(want)-4:])
		}
		if encoder == pipeline.EncoderLit && !bytes.Equal(stored, want) {
			t.Fatalf("%s: %d stored bytes are not zstdlit's %d", where, len(stored), len(want))
		}
		n++
	})
	return n
}

// CI runs this with ZSPOOL_REQUIRE_INTEROP=1, so an independent reader
// (zarrita.js, whose zstd is libzstd's and verifies the checksum) must
// open checksummed frames of both encoders, single- and multi-block.
func TestChecksummedFramesOfEitherEncoderVerifyAndReadBackInZarrita(t *testing.T) {
	spool := t.TempDir()
	acqs := []*acquisition{
		// 128 KiB chunks: one block a frame.
		cameraAcq("sum_le", 6, 512, []int64{1, 256, 256}, []int64{2, 2, 2}, false),
		// 300 KiB chunks: three blocks, the last short; ragged in y and x.
		cameraAcq("sum_be_ragged", 6, 700, []int64{2, 256, 300}, []int64{1, 2, 2}, true),
	}
	var cases []interopCase
	for _, enc := range []string{pipeline.EncoderKlauspost, pipeline.EncoderLit} {
		dest := filepath.Join(t.TempDir(), enc)
		for _, a := range acqs {
			mp := a.write(t, spool)
			ds := a.name + ".ome.zarr"
			raw := filepath.Join(spool, a.name+".raw")
			t.Run(enc+"/"+a.name, func(t *testing.T) {
				if _, stderr, err := zspool(t, "convert", mp, "--dest", dest, "--zstd-encoder", enc, "--zstd-checksum", "--quiet"); err != nil {
					t.Fatalf("convert: %v\n%s", err, stderr)
				}
				out, stderr, err := zspool(t, "verify", filepath.Join(dest, ds), "--raw", raw, "--quiet")
				if err != nil || !strings.Contains(out, "equals the raw file") {
					t.Fatalf("verify: %v\n%s%s", err, out, stderr)
				}
				if n := checkChecksummedChunks(t, dest, ds, enc); n == 0 {
					t.Fatal("no chunk is stored: the case proves nothing")
				}
			})
			cases = append(cases, interopCase{Dataset: filepath.Join(dest, ds), Raw: raw})
		}
	}
	checkWithZarrita(t, cases)
}

func TestTheZstdChecksumFlagIsOffUnlessGiven(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want bool
	}{
		{"left out, frames carry no checksum", nil, false},
		{"given, frames carry one", []string{"--zstd-checksum"}, true},
		{"given false, frames carry none", []string{"--zstd-checksum=false"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ef engineFlags
			fs := newFlags("convert", "", &bytes.Buffer{})
			ef.register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			o, err := ef.options()
			if err != nil || o.ZstdChecksum != tc.want {
				t.Fatalf("ZstdChecksum = %v (%v), want %v", o.ZstdChecksum, err, tc.want)
			}
		})
	}
}

func TestTheBenchHeaderSaysWhenFramesCarryAChecksum(t *testing.T) {
	tests := []struct {
		name  string
		extra []string
		want  bool
	}{
		{"with --zstd-checksum it says so", []string{"--zstd-checksum"}, true},
		{"without it, it says nothing", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "--engine", "cpu", "--size", "1MiB", "--frame", "256", "--chunk", "64"}, tc.extra...)
			out, stderr, err := zspool(t, args...)
			if err != nil {
				t.Fatalf("bench: %v\n%s", err, stderr)
			}
			// The header's second line ends with the codec's details.
			if got := strings.Contains(out, "codec zstd level 1, encoder window (the default), checksum\n"); got != tc.want {
				t.Fatalf("the header names the checksum: %v, want %v\n%s", got, tc.want, out)
			}
		})
	}
}

func TestTheDaemonConfigsZstdChecksumReachesTheDaemonOptionsAndConfigCheck(t *testing.T) {
	base := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(base, "spool"), 0o755))
	tests := []struct {
		name, line  string
		want        bool
		yaml, check string
	}{
		{"left out, it is off", "", false, "zstd_checksum: false\n", "# zstd checksum: off"},
		{"false is off", "zstd_checksum: false\n", false, "zstd_checksum: false\n", "# zstd checksum: off"},
		{"true is on", "zstd_checksum: true\n", true, "zstd_checksum: true\n", "# zstd checksum: on"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := "spool_dir: " + filepath.Join(base, "spool") + "\nstate_dir: " + filepath.Join(base, "state") +
				"\ndestination:\n  url: " + filepath.Join(base, "out") + "\n" + tc.line
			c, err := config.ParseDaemon([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			o, err := daemonOptions(c)
			if err != nil || o.ZstdChecksum != tc.want {
				t.Fatalf("daemon options carry ZstdChecksum %v (%v), want %v", o.ZstdChecksum, err, tc.want)
			}
			p := filepath.Join(base, string(rune('a'+i))+".yaml")
			writeFile(t, p, doc)
			out, stderr, err := zspool(t, "config", "check", "--offline", p)
			if err != nil || !strings.Contains(out, "\n"+tc.yaml) || !strings.Contains(out, tc.check) {
				t.Fatalf("config check: %v; want %q and %q in\n%s%s", err, tc.yaml, tc.check, out, stderr)
			}
		})
	}
}
