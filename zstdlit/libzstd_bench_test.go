package zstdlit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/zspool/zspool/internal/libzstd"
	"github.com/zspool/zspool/internal/synth"
)

// libzstdSize compresses every chunk as its own frame with the zstd CLI
// (libzstd) at level, one invocation over one file per chunk, and sums the
// frames' sizes.
func libzstdSize(b *testing.B, chunks [][]byte, level int) int64 {
	dir := b.TempDir()
	args := []string{fmt.Sprintf("-%d", level), "-q", "--no-check", "--no-progress"}
	for i, ch := range chunks {
		p := filepath.Join(dir, fmt.Sprintf("c%04d", i))
		if err := os.WriteFile(p, ch, 0o644); err != nil {
			b.Fatal(err)
		}
		args = append(args, p)
	}
	if out, err := exec.Command("zstd", args...).CombinedOutput(); err != nil {
		b.Fatalf("zstd: %v\n%s", err, out)
	}
	var n int64
	for i := range chunks {
		fi, err := os.Stat(filepath.Join(dir, fmt.Sprintf("c%04d.zst", i)))
		if err != nil {
			b.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// BenchmarkCameraRatioAgainstLibzstd reports, per realistic camera set and
// level, the ratio of libzstd (the zstd CLI: what tensorstore, zarr-python
// and acquire-zarr store), klauspost and zstdlit on the same 2 MiB chunks,
// the segmented encoder (zstdlit with the seeded parse, as both engines
// run it; "lit" in the metrics) and the windowed one, and each one's share
// of libzstd's ratio. The segmented and windowed encoders run their
// ladders' rungs for the level.
//
//	go test -run '^$' -bench CameraRatio -benchtime 1x ./zstdlit
func BenchmarkCameraRatioAgainstLibzstd(b *testing.B) {
	if _, err := exec.LookPath("zstd"); err != nil {
		b.Skip("needs the zstd CLI (Debian: zstd) as the libzstd reference")
	}
	for _, cam := range synth.Cameras(1024, 1024) {
		chunks := cam.ZarrChunks()
		var in int64
		for _, ch := range chunks {
			in += int64(len(ch))
		}
		for _, level := range []int{1, 3} {
			b.Run(fmt.Sprintf("%s/level%d", cam.Name, level), func(b *testing.B) {
				kl, err := klauspostAt(level)
				if err != nil {
					b.Fatal(err)
				}
				defer kl.Close()
				var lib, kls, lit, win int64
				wopt := WindowOptionsFor(level, cam.ElemSize())
				for b.Loop() {
					lib = libzstdSize(b, chunks, level)
					kls, lit, win = 0, 0, 0
					var dst []byte
					for _, ch := range chunks {
						dst = kl.EncodeAll(ch, dst[:0])
						kls += int64(len(dst))
						dst = Encode(dst[:0], ch, Options{Level: level, ElemSize: cam.ElemSize()})
						lit += int64(len(dst))
						dst = EncodeWindow(dst[:0], ch, wopt)
						win += int64(len(dst))
					}
				}
				r := func(n int64) float64 { return float64(in) / float64(n) }
				b.ReportMetric(r(lib), "libzstd")
				b.ReportMetric(r(kls), "klauspost")
				b.ReportMetric(r(lit), "zstdlit")
				b.ReportMetric(100*r(kls)/r(lib), "%kl/lib")
				b.ReportMetric(r(win), "window")
				b.ReportMetric(100*r(lit)/r(lib), "%lit/lib")
				b.ReportMetric(100*r(win)/r(lib), "%win/lib")
			})
		}
	}
}

// namedEncoder is one encoder of the side-by-side benchmarks: it appends
// src's frame to dst.
type namedEncoder struct {
	name string
	enc  func(dst, src []byte) []byte
}

// libzstdEnc is lz's Encode in the benchmarks' signature; an error fails
// the benchmark.
func libzstdEnc(b *testing.B, lz *libzstd.Encoder) func(dst, src []byte) []byte {
	return func(dst, src []byte) []byte {
		out, err := lz.Encode(dst, src)
		if err != nil {
			b.Error(err)
		}
		return out
	}
}

// klauspostAt is a klauspost encoder for level, one goroutine's, with the
// options the CPU engine's compressor gives it.
func klauspostAt(level int) (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
		zstd.WithAllLitEntropyCompression(true), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
}

// BenchmarkCameraEncoders measures, side by side on one core, the CPU
// encoders' speed and ratio on the realistic camera sets, in the 2 MiB
// chunks a Zarr writer stores: klauspost, the windowed encoder (the CPU
// engine's default) and the segmented one, at levels 1 and 3, and, built
// with -tags libzstd (Debian's libzstd-dev), libzstd itself, what the
// other Zarr writers run (-v prints its release).
//
//	go test -tags libzstd -run '^$' -bench CameraEncoders -benchtime 4x ./zstdlit
func BenchmarkCameraEncoders(b *testing.B) {
	if libzstd.Available {
		b.Logf("libzstd %s", libzstd.Version()) // the reference's figures depend on its release
	}
	for _, cam := range synth.Cameras(1024, 1024) {
		chunks := cam.ZarrChunks()
		var in int64
		for _, ch := range chunks {
			in += int64(len(ch))
		}
		for _, level := range []int{1, 3} {
			kl, err := klauspostAt(level)
			if err != nil {
				b.Fatal(err)
			}
			encoders := []namedEncoder{
				{"klauspost", func(dst, src []byte) []byte { return kl.EncodeAll(src, dst) }},
				{"window", func(dst, src []byte) []byte {
					return EncodeWindow(dst, src, WindowOptionsFor(level, cam.ElemSize()))
				}},
				{"segmented", func(dst, src []byte) []byte {
					return Encode(dst, src, Options{Level: level, ElemSize: cam.ElemSize()})
				}},
			}
			var lz *libzstd.Encoder
			if libzstd.Available {
				if lz, err = libzstd.New(level); err != nil {
					b.Fatal(err)
				}
				encoders = append(encoders, namedEncoder{"libzstd", libzstdEnc(b, lz)})
			}
			for _, e := range encoders {
				b.Run(fmt.Sprintf("%s/level%d/%s", cam.Name, level, e.name), func(b *testing.B) {
					b.SetBytes(in)
					var dst []byte
					var out int64
					for b.Loop() {
						out = 0
						for _, ch := range chunks {
							dst = e.enc(dst[:0], ch)
							out += int64(len(dst))
						}
					}
					b.ReportMetric(float64(in)/float64(out), "ratio")
				})
			}
			kl.Close()
			if lz != nil {
				lz.Close()
			}
		}
	}
}

// BenchmarkCameraEncodersParallel runs the level-1 encoders on every core
// at once (one encoder per goroutine, chunks handed out in turn), as the
// CPU engine's workers do: its rate over BenchmarkCameraEncoders' one-core
// rate says how the encoder scales with the cores sharing caches and
// memory, apart from the rest of the pipeline; with -tags libzstd,
// libzstd's as well.
//
//	go test -tags libzstd -run '^$' -bench CameraEncodersParallel -benchtime 4x ./zstdlit
func BenchmarkCameraEncodersParallel(b *testing.B) {
	cam := synth.CameraBright(2048, 2048) // 64 chunks: a few for each of 16 cores
	chunks := cam.ZarrChunks()
	var in int64
	for _, ch := range chunks {
		in += int64(len(ch))
	}
	names := []string{"klauspost", "window"}
	if libzstd.Available {
		names = append(names, "libzstd")
	}
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(in)
			for b.Loop() {
				var next atomic.Int64
				var wg sync.WaitGroup
				for range runtime.GOMAXPROCS(0) {
					wg.Add(1)
					go func() {
						defer wg.Done()
						opt := WindowOptionsFor(1, cam.ElemSize())
						enc := func(dst, src []byte) []byte { return EncodeWindow(dst, src, opt) }
						switch name {
						case "klauspost":
							kl, err := klauspostAt(1)
							if err != nil {
								b.Error(err)
								return
							}
							defer kl.Close()
							enc = func(dst, src []byte) []byte { return kl.EncodeAll(src, dst) }
						case "libzstd":
							lz, err := libzstd.New(1)
							if err != nil {
								b.Error(err)
								return
							}
							defer lz.Close()
							enc = libzstdEnc(b, lz)
						}
						var dst []byte
						for {
							i := int(next.Add(1) - 1)
							if i >= len(chunks) {
								return
							}
							dst = enc(dst[:0], chunks[i])
						}
					}()
				}
				wg.Wait()
			}
		})
	}
}
