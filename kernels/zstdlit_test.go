//go:build cuda

package kernels

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/zspool/zspool/internal/synth"
	"github.com/zspool/zspool/zstdlit"
	"github.com/zspool/zspool/zstdlit/corpus"
)

var litDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))

// encodeOnGPU runs one batch of equally sized chunks through the kernels.
func encodeOnGPU(t *testing.T, d *Device, chunks [][]byte, opt zstdlit.Options) [][]byte {
	t.Helper()
	size := len(chunks[0])
	src := make([]byte, 0, size*len(chunks))
	for _, c := range chunks {
		if len(c) != size {
			t.Fatalf("chunks of %d and %d bytes in one batch", size, len(c))
		}
		src = append(src, c...)
	}
	b, err := NewLitBatch(d, int64(size), len(chunks), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	frames, err := b.Encode(src)
	if err != nil {
		t.Fatalf("%d chunks of %d bytes: %v", len(chunks), size, err)
	}
	return frames
}

// sameAsReference checks every GPU frame against zstdlit's, byte for
// byte, and that klauspost decodes it to the chunk.
func sameAsReference(t *testing.T, name string, chunks, frames [][]byte, opt zstdlit.Options) {
	t.Helper()
	for i, c := range chunks {
		want := zstdlit.Encode(nil, c, opt)
		got := frames[i]
		if !bytes.Equal(got, want) {
			at := 0
			for at < min(len(got), len(want)) && got[at] == want[at] {
				at++
			}
			t.Errorf("%s: chunk %d (%d bytes): GPU frame of %d bytes differs from zstdlit's %d bytes at byte %d",
				name, i, len(c), len(got), len(want), at)
			continue
		}
		dec, err := litDecoder.DecodeAll(got, nil)
		if err != nil || !bytes.Equal(dec, c) {
			t.Errorf("%s: chunk %d: klauspost does not decode the GPU frame to the chunk: %v", name, i, err)
		}
	}
}

func TestLitKernelsWriteTheReferenceBytesForTheCorpus(t *testing.T) {
	d := openDevice(t)
	// Level 1's minimum match (6), 7 and the longest allowed, on every
	// position, on the odd grid of 16-bit data (the even one when
	// big-endian) and the even grid of 8-bit data; level 3's rung with its
	// own minimum (5) and a longer one.
	for _, opt := range []zstdlit.Options{{}, {MinMatch: 7}, {MinMatch: 8}, {ElemSize: 2}, {ElemSize: 2, MinMatch: 7},
		{ElemSize: 2, MinMatch: 8}, {ElemSize: 2, BigEndian: true}, {ElemSize: 1}, {ElemSize: 1, MinMatch: 6}, {Level: 3},
		{Level: 3, MinMatch: 6}} {
		for _, c := range corpus.Cases() {
			t.Run(fmt.Sprintf("level_%d/min_match_%d/grid_%d_phase_%d/%s", max(opt.Level, 1), opt.ShortestMatch(), opt.Grid(),
				opt.GridPhase(), c.Name), func(t *testing.T) {
				chunks := [][]byte{c.Data}
				sameAsReference(t, c.Name, chunks, encodeOnGPU(t, d, chunks, opt), opt)
			})
		}
	}
}

// The parse's matches reach across the block, so its offsets take the
// side slots and its sequences up to 68 bits: the camera sets in Zarr
// chunks, where most sequences reach back past their segment.
func TestLitKernelsWriteTheReferenceBytesForCameraChunks(t *testing.T) {
	d := openDevice(t)
	for _, cam := range synth.Cameras(512, 512) {
		chunks := cam.ZarrChunks()
		for _, level := range []int{1, 3} {
			opt := zstdlit.Options{Level: level, ElemSize: cam.ElemSize()}
			name := fmt.Sprintf("camera %s at level %d", cam.Name, level)
			sameAsReference(t, name, chunks, encodeOnGPU(t, d, chunks, opt), opt)
		}
	}
}

// zl_plan tests a block's first 256 bytes before the rest for one repeated
// byte (an RLE block): these chunks make blocks that are one byte
// throughout, one byte but for their last, one byte for their first 300
// and noise after, and one byte for their first 255 and noise after.
func TestLitKernelsTellAnRLEBlockFromOneThatDiffersPastItsFirstBytes(t *testing.T) {
	d := openDevice(t)
	const n = 2 * zstdlit.MaxBlockSize
	r := rand.New(rand.NewPCG(3, 4))
	var chunks [][]byte
	for _, same := range []int{n, zstdlit.MaxBlockSize - 1, 300, 255} {
		c := bytes.Repeat([]byte{7}, n)
		for i := same; i < n; i++ {
			if same < zstdlit.MaxBlockSize-1 {
				c[i] = byte(r.IntN(256))
			} else if i == zstdlit.MaxBlockSize-1 {
				c[i] = 8 // the first block's last byte; the second block is all 7s
			}
		}
		chunks = append(chunks, c)
	}
	for _, level := range []int{1, 3} {
		opt := zstdlit.Options{Level: level}
		sameAsReference(t, fmt.Sprintf("level %d", level), chunks, encodeOnGPU(t, d, chunks, opt), opt)
	}
}

func TestLitKernelsAssignTheRFCsCanonicalCodes(t *testing.T) {
	d := openDevice(t)
	// Counts 64, 32, 16, 8, 8 of symbols 0, 1, 2, 4, 5 give lengths 1, 2,
	// 3, 4, 4: the RFC 8878 example (and zstdlit's "ABEF" golden vector),
	// whose canonical codes are 1, 01, 001, 0000, 0001.
	var in []byte
	for s, n := range map[byte]int{0: 64, 1: 32, 2: 16, 4: 8, 5: 8} {
		in = append(in, bytes.Repeat([]byte{s}, n)...)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	b, err := NewLitBatch(d, int64(len(in)), 1, zstdlit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	frames, err := b.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	sameAsReference(t, "RFC example", [][]byte{in}, frames, zstdlit.Options{})
	tab, err := b.table(0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][2]uint32{0: {1, 1}, 1: {1, 2}, 2: {1, 3}, 3: {0, 0}, 4: {0, 4}, 5: {1, 4}}
	for s, w := range want {
		if code, length := tab[s]&0xffff, tab[s]>>16; code != w[0] || length != w[1] {
			t.Errorf("symbol %d: code %b of %d bits, want %b of %d", s, code, length, w[0], w[1])
		}
	}
}

// randomChunk makes one chunk of a random kind, the kinds the corpus
// covers: few symbols, all 256, only high symbols, geometric (deep trees),
// 12-bit camera data, runs, and pure noise.
func randomChunk(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	switch r.IntN(8) {
	case 0: // one symbol
		v := byte(r.IntN(256))
		for i := range b {
			b[i] = v
		}
	case 1: // two symbols, skewed
		p := r.Float64()
		for i := range b {
			if r.Float64() < p {
				b[i] = 7
			} else {
				b[i] = 200
			}
		}
	case 2: // all 256
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
	case 3: // only symbols above 128
		for i := range b {
			b[i] = byte(129 + r.IntN(127))
		}
	case 4: // geometric: deep trees, the 11-bit limit binds
		p := 0.2 + 0.7*r.Float64()
		for i := range b {
			k := 0
			for k < 255 && r.Float64() > p {
				k++
			}
			b[i] = byte(k)
		}
	case 5: // 12-bit camera-like
		copy(b, corpus.Dim12((n+1)/2, r.Uint64()))
	case 6: // runs of a few values
		for i := 0; i < n; {
			v, l := byte(r.IntN(4)), 1+r.IntN(5000)
			for ; l > 0 && i < n; l-- {
				b[i] = v
				i++
			}
		}
	default: // bright 12-bit
		copy(b, corpus.Bright12((n+1)/2, r.Uint64()))
	}
	return b
}

func TestLitKernelsWriteTheReferenceBytesForRandomBatches(t *testing.T) {
	d := openDevice(t)
	r := rand.New(rand.NewPCG(2026, 11))
	sizes := []int{0, 1, 2, 5, 63, 64, 65, 1023, 1024, 1025, 4095, 128<<10 - 1, 128 << 10, 128<<10 + 1,
		256<<10 + 3, 384 << 10, 1 << 20}
	for range 60 {
		sizes = append(sizes, r.IntN(700<<10))
	}
	sameAsReferenceForRandomBatches(t, d, r, sizes, 4, zstdlit.Options{})
	// The grid on chunks of odd sizes too, which the engine never hands
	// it: their seeds must still keep apart. Odd on 16-bit data, even on
	// 8-bit data.
	sameAsReferenceForRandomBatches(t, d, r, sizes, 4, zstdlit.Options{ElemSize: 2})
	sameAsReferenceForRandomBatches(t, d, r, sizes, 4, zstdlit.Options{ElemSize: 1})
	sameAsReferenceForRandomBatches(t, d, r, sizes, 4, zstdlit.Options{Level: 3})
}

// Chunks of a block and a half at level 3, more of them than zl_cseed's
// grid holds: it walks two blocks a chunk, the second short, and takes up
// a table part another chunk left behind.
func TestLitKernelsSeedChunksOfABlockAndAHalfAtLevel3(t *testing.T) {
	d := openDevice(t)
	cam := synth.CameraBright(512, 512)
	var chunks [][]byte
	for _, ch := range cam.ZarrChunks() {
		for off := 0; off+(192<<10) <= len(ch); off += 192 << 10 {
			chunks = append(chunks, ch[off:off+(192<<10)])
		}
	}
	for len(chunks) < litChunkSeedCTAs/d.chunkParts+40 {
		chunks = append(chunks, chunks[len(chunks)%7])
	}
	opt := zstdlit.Options{Level: 3}
	sameAsReference(t, fmt.Sprintf("%d camera chunks of 192 KiB at level 3", len(chunks)), chunks,
		encodeOnGPU(t, d, chunks, opt), opt)
}

// The host splits level 3's chunk table into as few parts as the GPU's
// shared memory allows (three on an H100, four on an A100): every split
// must give each position the same chunk seed, so a GPU with less shared
// memory writes the same bytes.
func TestLitKernelsWriteTheSameBytesWhateverTheChunkTablesParts(t *testing.T) {
	d := openDevice(t)
	cams := synth.Cameras(512, 512) // a batch a camera: one chunk size a batch
	opt := zstdlit.Options{Level: 3}
	fewest := d.chunkParts
	t.Cleanup(func() { _ = d.do(func() error { d.chunkParts = fewest; return nil }) })
	for _, parts := range []int{fewest, 4, 5, 7, litMaxChunkParts} {
		if parts < fewest {
			continue // more shared memory a CTA than the GPU grants
		}
		if err := d.do(func() error { d.chunkParts = parts; return nil }); err != nil {
			t.Fatal(err)
		}
		for _, cam := range cams {
			chunks := cam.ZarrChunks()
			sameAsReference(t, fmt.Sprintf("%s's %d chunks at level 3, the chunk table in %d parts", cam.Name, len(chunks), parts),
				chunks, encodeOnGPU(t, d, chunks, opt), opt)
		}
	}
}

func TestLitKernelsAppendTheXXH64ChecksumWhenAsked(t *testing.T) {
	d := openDevice(t)
	r := rand.New(rand.NewPCG(64, 64))
	opt := zstdlit.Options{Checksum: true}
	// Sizes around XXH64's 32-byte stripes and its 8/4/1-byte tail steps;
	// odd sizes put every chunk but the first at an unaligned address.
	sizes := []int{0, 1, 3, 4, 7, 8, 31, 32, 33, 63, 64, 100, 1023, 4096, 128<<10 + 3, 1 << 20}
	for range 20 {
		sizes = append(sizes, r.IntN(600<<10))
	}
	sameAsReferenceForRandomBatches(t, d, r, sizes, 9, opt)
}

// sameAsReferenceForRandomBatches encodes, for each size, a batch of 1 to
// maxChunks random chunks of that size on the GPU and compares it with
// zstdlit.
func sameAsReferenceForRandomBatches(t *testing.T, d *Device, r *rand.Rand, sizes []int, maxChunks int,
	opt zstdlit.Options) {
	t.Helper()
	for i, n := range sizes {
		chunks := make([][]byte, 1+r.IntN(maxChunks))
		for j := range chunks {
			chunks[j] = randomChunk(r, n)
		}
		name := fmt.Sprintf("batch %d: %d×%d bytes", i, len(chunks), n)
		sameAsReference(t, name, chunks, encodeOnGPU(t, d, chunks, opt), opt)
	}
}

func TestLitKernelsKeepTheContentSizeInFramesOver8MiB(t *testing.T) {
	d := openDevice(t)
	r := rand.New(rand.NewPCG(5, 5))
	c := randomChunk(r, 8<<20+5)
	sameAsReference(t, "8 MiB + 5", [][]byte{c}, encodeOnGPU(t, d, [][]byte{c}, zstdlit.Options{}), zstdlit.Options{})
	ck := zstdlit.Options{Checksum: true}
	sameAsReference(t, "8 MiB + 5 with checksum", [][]byte{c}, encodeOnGPU(t, d, [][]byte{c}, ck), ck)
	l3 := zstdlit.Options{Level: 3}
	sameAsReference(t, "8 MiB + 5 at level 3", [][]byte{c}, encodeOnGPU(t, d, [][]byte{c}, l3), l3)
}

// BenchmarkLitKernels times the encoder's kernels alone (plan, frame
// layout, scan, encode; no copies) on 1 GiB batches resident on the GPU.
// It reports the input rate (kernel GB/s) and the ratio.
func BenchmarkLitKernels(b *testing.B) {
	if _, err := Probe(); err != nil {
		b.Skipf("no usable GPU: %v", err)
	}
	d, err := Open(0)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	const total = 1 << 30
	type set struct {
		name string
		elem int // the element size the engine would pass (the grid)
		data func() []byte
	}
	sets := []set{
		{"mix", 2, func() []byte { return tile(corpus.BenchMix(128), total) }}, // 64 MiB of 512×512 frames
		{"dim", 2, func() []byte { return tile(corpus.Dim12(32<<20, 1), total) }},
		{"bright", 2, func() []byte { return tile(corpus.Bright12(32<<20, 2), total) }},
		{"uniform", 2, func() []byte { return tile(corpus.Uniform12(32<<20, 3), total) }},
	}
	// The realistic cameras (the ratio benchmark's and zspool bench's):
	// 32 frames of 1024×1024 each, tiled to the batch.
	for _, cam := range synth.Cameras(1024, 1024) {
		sets = append(sets, set{"camera-" + cam.Name, cam.ElemSize(), func() []byte {
			fb := cam.FrameBytes()
			frames := make([]byte, 32*fb)
			for t := range int64(32) {
				cam.Frame(frames[t*fb:(t+1)*fb], t)
			}
			return tile(frames, total)
		}})
	}
	for _, set := range sets {
		data := set.data()
		type run struct {
			chunk int64
			opt   zstdlit.Options
		}
		e := set.elem
		runs := []run{{256 << 10, zstdlit.Options{Level: 1, ElemSize: e}}, {1 << 20, zstdlit.Options{Level: 1, ElemSize: e}},
			{2 << 20, zstdlit.Options{Level: 1, ElemSize: e}}, {2 << 20, zstdlit.Options{Level: 1, Checksum: true, ElemSize: e}},
			{2 << 20, zstdlit.Options{Level: 3, ElemSize: e}}}
		if (zstdlit.Options{Level: 1, ElemSize: e}).Grid() == 2 {
			// Beside the even grid, the parse of every position (as where
			// the element size is not known): what the grid buys, in one
			// run.
			runs = append(runs, run{2 << 20, zstdlit.Options{Level: 1}})
		}
		for _, run := range runs {
			chunk := run.chunk
			name := fmt.Sprintf("%s/chunk=%dKiB/level=%d", set.name, chunk>>10, run.opt.Level)
			if run.opt.Checksum {
				name += "/checksum"
			}
			if run.opt.Grid() == 1 && !run.opt.Strong() {
				name += "/every-position"
			}
			b.Run(name, func(b *testing.B) {
				lb, err := NewLitBatch(d, chunk, int(total/chunk), run.opt)
				if err != nil {
					b.Fatal(err)
				}
				defer lb.Close()
				if err := lb.Load(data); err != nil {
					b.Fatal(err)
				}
				if _, err := lb.Run(); err != nil { // warm-up
					b.Fatal(err)
				}
				var kernel time.Duration
				var stages [5]time.Duration
				b.SetBytes(total)
				b.ResetTimer()
				for range b.N {
					dt, err := lb.Run()
					if err != nil {
						b.Fatal(err)
					}
					kernel += dt
					for i, st := range lb.Stages() {
						stages[i] += st
					}
				}
				b.StopTimer()
				frames, err := lb.Frames()
				if err != nil {
					b.Fatal(err)
				}
				var out int
				for _, f := range frames {
					out += len(f)
				}
				b.ReportMetric(float64(total)*float64(b.N)/kernel.Seconds()/1e9, "kernelGB/s")
				b.ReportMetric(float64(total)/float64(out), "ratio")
				for i, name := range []string{"seed-ms", "parse-ms", "seq-ms", "pack-ms", "rest-ms"} {
					b.ReportMetric(float64(stages[i].Microseconds())/1e3/float64(b.N), name)
				}
			})
		}
	}
}

func tile(b []byte, size int) []byte {
	out := make([]byte, size)
	for off := 0; off < size; off += len(b) {
		copy(out[off:], b)
	}
	return out
}
