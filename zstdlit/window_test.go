package zstdlit

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zspool/zspool/internal/synth"
	"github.com/zspool/zspool/zstdlit/corpus"
)

func windowDecodes(t testing.TB, src []byte, opt WindowOptions) []byte {
	t.Helper()
	frame := EncodeWindow(nil, src, opt)
	got, err := decoder.DecodeAll(frame, nil)
	if err != nil {
		t.Fatalf("klauspost cannot decode the window frame of %d bytes (%+v): %v", len(src), opt, err)
	}
	if !bytes.Equal(got, src) {
		t.Fatalf("window frame of %d bytes (%+v) decodes to %d different bytes", len(src), opt, len(got))
	}
	return frame
}

// ladder is every rung of WindowOptionsFor, plus the smallest settings.
func ladder() []WindowOptions {
	var opts []WindowOptions
	for _, level := range []int{1, 3} {
		for _, elem := range []int{1, 2} {
			opts = append(opts, WindowOptionsFor(level, elem))
		}
	}
	return append(opts, WindowOptions{MinMatch: 4, HashLog: 10, SearchStrength: 1, Stride: 1, Checksum: true})
}

func TestEveryWindowFrameDecodesWithKlauspost(t *testing.T) {
	for _, tc := range corpus.Cases() {
		for _, opt := range ladder() {
			t.Run(fmt.Sprintf("%s/%d-%d-%d-%d", tc.Name, opt.MinMatch, opt.HashLog, opt.SearchStrength, opt.Stride), func(t *testing.T) {
				windowDecodes(t, tc.Data, opt)
			})
		}
	}
}

func TestWindowFramesOfRealisticCamerasDecodeAtEveryLevel(t *testing.T) {
	for _, cam := range synth.Cameras(256, 256) {
		chunks := cam.ZarrChunks()
		for level := 1; level <= 4; level++ {
			windowDecodes(t, chunks[0], WindowOptionsFor(level, cam.ElemSize()))
		}
	}
}

// Matches reach across blocks: a 64 KiB stretch of noise repeated 300 KiB
// later costs almost nothing the second time. Over 8 MiB the frame
// declares a 128 KiB window, and the same repeat must then be stored as it
// is, or a decoder that holds the window would fail.
func TestWindowMatchesReachTheWholeFrameButNotPastADeclaredWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	noise := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	for _, tc := range []struct {
		name   string
		size   int
		repeat bool // whether the second copy may be a match
	}{
		{"within an 8 MiB single-segment frame", 1 << 20, true},
		{"beyond the 128 KiB window of a larger frame", 9 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := noise(tc.size)
			copy(src[300<<10+64<<10:], src[300<<10:300<<10+64<<10]) // repeat 64 KiB from 64 KiB back
			copy(src[700<<10:], src[100<<10:164<<10])               // repeat 64 KiB from 600 KiB back
			// Every position searched and entered: the test is about
			// where matches may point, not how hard the parse looks.
			frame := windowDecodes(t, src, WindowOptions{SearchStrength: 30, Stride: 1})
			saved := len(src) - len(frame)
			// The near repeat is always a match; the far one only in a
			// single-segment frame.
			want := 64 << 10
			if tc.repeat {
				want = 128 << 10
			}
			if saved < want-1024 || saved > want+1024 {
				t.Fatalf("frame of %d bytes saves %d bytes, want about %d", len(src), saved, want)
			}
		})
	}
}

func TestWindowOutputIsAppendedToDst(t *testing.T) {
	src := corpus.Geometric(3000, 0.4, 3)
	prefix := []byte("prefix")
	out := EncodeWindow(append([]byte(nil), prefix...), src, WindowOptions{})
	if !bytes.Equal(out[:len(prefix)], prefix) || !bytes.Equal(out[len(prefix):], EncodeWindow(nil, src, WindowOptions{})) {
		t.Fatal("EncodeWindow does not append")
	}
}

func TestARepeatOffsetAfterAStoredBlockIsTheDecodersOne(t *testing.T) {
	// Block 1 has structure: it is compressed, and its matches set the
	// repeat offsets. Block 2 is noise with a few 16-byte repeats from
	// 5000 bytes back: the parse finds them, but the block is stored raw,
	// so the decoder never sees those sequences. Block 3 is noise whose
	// first repeat is again 5000 bytes back: coded as "repeat offset 1"
	// by an encoder that kept block 2's offsets, it would copy from
	// block 1's offset instead. (Block 3 holds 4-bit noise, so that it is
	// stored compressed and its sequences reach the decoder.)
	r := rand.New(rand.NewPCG(3, 4))
	src := make([]byte, 3*MaxBlockSize)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	for i := 0; i < MaxBlockSize; i++ {
		src[i] = byte(i%7*13 + r.IntN(2))
	}
	b2, b3 := MaxBlockSize, 2*MaxBlockSize
	for i := b3; i < len(src); i++ {
		src[i] &= 15 // Huffman-compressible, so block 3 is kept compressed
	}
	for p := b2 + 6000; p < b2+66000; p += 1000 {
		copy(src[p:p+16], src[p-5000:])
	}
	copy(src[b3+100:b3+116], src[b3+100-5000:])
	opt := WindowOptions{MinMatch: 6, SearchStrength: 30, Stride: 1}
	frame := windowDecodes(t, src, opt)
	// The test means something only if block 2 was stored raw.
	b1 := FrameHeaderSize(len(src))
	if h := frame[b1+3+windowBlockSize(t, frame[b1:]):]; h[0]&6 != blockRaw<<1 {
		t.Fatalf("block 2 is of type %d, want raw", h[0]>>1&3)
	}
	for _, opt := range ladder() {
		windowDecodes(t, src, opt)
	}
}

// windowBlockSize is the content size of the block whose header starts b.
func windowBlockSize(t *testing.T, b []byte) int {
	t.Helper()
	h := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
	if h>>1&3 == blockRLE {
		return 1
	}
	return h >> 3 // Block_Size: the stored bytes of a Raw or Compressed block
}

func FuzzEncodeWindowDecodes(f *testing.F) {
	for _, tc := range corpus.Cases() {
		f.Add(tc.Data[:min(len(tc.Data), 20000)], uint8(0))
	}
	f.Fuzz(func(t *testing.T, src []byte, rung uint8) {
		opts := ladder()
		windowDecodes(t, src, opts[int(rung)%len(opts)])
	})
}

func TestDenseFramesTakeTheirRung(t *testing.T) {
	dim, bright := synth.CameraDim(256, 256), synth.CameraBright(256, 256)
	cells8, saturated8 := synth.Camera8(256, 256), synth.Camera8Saturated(256, 256)
	for _, tc := range []struct {
		name     string
		chunk    []byte
		elemSize int
		// the rung the frame must be written with
		mm, ss, stride int
		fill           bool
	}{
		{"a dim 12-bit frame (under DenseEntropy bits a byte) takes 7-byte matches and fills the tables", dim.ZarrChunks()[0], 2, 7, 4, 2, true},
		{"a bright 12-bit frame keeps 6-byte matches", bright.ZarrChunks()[0], 2, 6, 4, 2, false},
		{"an 8-bit frame of cells on a dark field (under DenseEntropy8) takes the sparse search", cells8.ZarrChunks()[0], 1, 8, 3, 2, false},
		{"an 8-bit frame of saturated cells keeps the dense search", saturated8.ZarrChunks()[0], 1, 8, 8, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := WindowOptionsFor(1, tc.elemSize)
			fixed := opt
			fixed.Dense = DenseRung{}
			fixed.MinMatch, fixed.SearchStrength, fixed.Stride, fixed.Fill = tc.mm, tc.ss, tc.stride, tc.fill
			if got, want := EncodeWindow(nil, tc.chunk, opt), EncodeWindow(nil, tc.chunk, fixed); !bytes.Equal(got, want) {
				t.Fatalf("entropy %.2f bits a byte: the frame is not the one of %d-byte matches, search strength %d, stride %d, fill %v",
					entropy(tc.chunk[:MaxBlockSize]), tc.mm, tc.ss, tc.stride, tc.fill)
			}
		})
	}
}

// At level 3 a second table of 8-byte hashes is asked first; on a dim
// chunk it finds longer matches than the latest 4-byte one (the whole
// corpus: dim 3.623 without it, 3.675 with it).
func TestTheLongTableFindsLongerMatchesOnADimChunk(t *testing.T) {
	chunk := synth.CameraDim(256, 256).ZarrChunks()[0]
	with := WindowOptionsFor(3, 2)
	without := with
	without.LongHashLog = 0
	a, b := len(windowDecodes(t, chunk, with)), len(windowDecodes(t, chunk, without))
	if a >= b {
		t.Fatalf("with the long table %d bytes, without %d: it found nothing", a, b)
	}
	t.Logf("with the long table %d bytes, without %d", a, b)
}

// The sequences coder writes a sequence's bits in two groups of at most
// 49, the first holding the literal length's 16 extra bits at 64 Ki
// literals. A block with a sequence that spends both lengths' longest
// extras, among thousands of every kind (tables of the largest logs,
// whose rare codes spend the most state bits), must still decode.
func TestASequenceWithTheLongestLengthsDecodes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	src := make([]byte, 0, MaxBlockSize)
	for len(src) < 64 {
		src = append(src, byte(r.Uint32()))
	}
	short := func(until int) {
		for len(src) < until {
			for range 1 + r.IntN(3) {
				src = append(src, byte(r.Uint32()))
			}
			n := 6 + r.IntN(7)
			at := r.IntN(min(len(src), 16000) - n)
			src = append(src, src[at:at+n]...)
		}
	}
	short(16000)
	start := len(src)
	for range 65600 { // literals: a 16-bit extra
		src = append(src, byte(r.Uint32()))
	}
	src = append(src, src[start:start+33000]...) // a match with a 15-bit extra
	short(MaxBlockSize - 16)                     // the long one is not the last sequence, coded apart
	src = src[:MaxBlockSize-16]
	// Every position searched and entered, so that the match is found.
	opt := WindowOptions{MinMatch: 6, HashLog: 17, SearchStrength: 30, Stride: 1}.withDefaults()
	e := &windowEncoder{table: make([]uint32, 1<<opt.HashLog), tagMask: ^(uint32(1)<<20 - 1), rep: [3]uint32{1, 4, 8}}
	e.parseWindow(src, 0, len(src), len(src), opt)
	longest := sequence{}
	for _, q := range e.wseqs {
		if q.litLen > longest.litLen {
			longest = q
		}
	}
	if llBits[llCode(longest.litLen)] != 16 || mlBits[mlCode(longest.matchLen)] < 15 || len(e.wseqs) < 2048 {
		t.Fatalf("the parse found %d sequences, the longest %+v: the case does not reach the limits", len(e.wseqs), longest)
	}
	windowDecodes(t, src, opt)
}

// literalsTypes is the Literals_Block_Type of each compressed block of a
// frame of n content bytes (2 Huffman-coded with its tree, 3 treeless).
func literalsTypes(t *testing.T, frame []byte, n int) []int {
	t.Helper()
	var types []int
	for p := FrameHeaderSize(n); ; {
		h := int(frame[p]) | int(frame[p+1])<<8 | int(frame[p+2])<<16
		if h>>1&3 == blockCompressed {
			types = append(types, int(frame[p+3]&3))
		}
		p += 3 + windowBlockSize(t, frame[p:])
		if h&1 == 1 {
			return types
		}
	}
}

func TestBrightCellsCodeMostBlocksWithTheDecodersHuffmanTable(t *testing.T) {
	src := synth.CameraBright(512, 512).ZarrChunks()[0]
	frame := windowDecodes(t, src, WindowOptionsFor(1, 2))
	types := literalsTypes(t, frame, len(src))
	treeless := 0
	for _, typ := range types {
		if typ == 3 {
			treeless++
		}
	}
	if treeless*2 < len(types) {
		t.Fatalf("%d of %d blocks' literals reuse the decoder's table (types %v), want most", treeless, len(types), types)
	}
}

// A block's literals may reuse the Huffman table only while the decoder
// holds it: a table built for a block that was then stored raw, or whose
// literals went raw after all (a few hundred of them, which the tree's
// description would outweigh, in a block of matches), never reached the
// decoder, which still holds the one before. Frames of blocks drawn from
// skewed bytes, bytes near uniform, and copies of earlier blocks with
// such bytes sprinkled in, densely or sparsely, must decode, treeless
// sections among them.
func TestATableOfAStoredBlockIsNotReusedAfterIt(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	ps := []float64{0.35, 0.5, 0.65}
	skewed := func(seed uint64) []byte { return corpus.Geometric(MaxBlockSize, ps[r.IntN(len(ps))], seed) }
	flat := func(seed uint64) []byte { return corpus.Uniform(MaxBlockSize, 0, 200+r.IntN(56), seed) }
	noise := func(seed uint64) []byte {
		if r.IntN(2) == 0 {
			return flat(seed)
		}
		return skewed(seed)
	}
	treeless := 0
	for trial := range 80 {
		var src []byte
		for range 3 + r.IntN(5) {
			seed := r.Uint64()
			switch k := r.IntN(4); {
			case k == 0 || len(src) == 0:
				src = append(src, skewed(seed)...)
			case k == 1:
				src = append(src, flat(seed)...)
			default:
				from := r.IntN(len(src)/MaxBlockSize) * MaxBlockSize
				blk := slices.Clone(src[from : from+MaxBlockSize])
				nz := noise(seed)
				gap := 10 + r.IntN(20)
				if k == 3 {
					gap = 500 + r.IntN(1500)
				}
				for i := r.IntN(gap); i < len(blk); i += gap {
					blk[i] = nz[i]
				}
				src = append(src, blk...)
			}
		}
		opt := ladder()[trial%len(ladder())]
		frame := windowDecodes(t, src, opt)
		for _, typ := range literalsTypes(t, frame, len(src)) {
			if typ == 3 {
				treeless++
			}
		}
	}
	if treeless == 0 {
		t.Fatal("no block reused the decoder's table: the test tests nothing")
	}
}
