package zstdlit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/zspool/zspool/zstdlit/corpus"
)

var decoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))

func decodes(t testing.TB, src []byte, opt Options) []byte {
	t.Helper()
	frame := Encode(nil, src, opt)
	got, err := decoder.DecodeAll(frame, nil)
	if err != nil {
		t.Fatalf("klauspost cannot decode the frame of %d bytes: %v", len(src), err)
	}
	if !bytes.Equal(got, src) {
		t.Fatalf("frame of %d bytes decodes to %d different bytes", len(src), len(got))
	}
	return frame
}

// The corpus cannot import zstdlit (these tests import it), so it keeps
// its own copy of the block size; its block-boundary cases are only
// boundaries while the two agree.
func TestTheCorpusBlockSizeIsTheEncoders(t *testing.T) {
	if corpus.BlockSize != MaxBlockSize {
		t.Fatalf("corpus.BlockSize %d, MaxBlockSize %d", corpus.BlockSize, MaxBlockSize)
	}
}

func TestEveryFrameDecodesWithKlauspost(t *testing.T) {
	for _, tc := range corpus.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			decodes(t, tc.Data, Options{})
			decodes(t, tc.Data, Options{Checksum: true})
			decodes(t, tc.Data, Options{Level: 3})
		})
	}
}

func TestFramesOver8MiBUseA128KiBWindowAndKeepTheContentSize(t *testing.T) {
	src := corpus.Gaussian12((8<<20)/2+100, 1000, 20, 1)
	frame := decodes(t, src, Options{})
	var h zstd.Header
	if err := h.Decode(frame); err != nil {
		t.Fatal(err)
	}
	if h.SingleSegment || !h.HasFCS || h.FrameContentSize != uint64(len(src)) || h.WindowSize != 128<<10 {
		t.Fatalf("header %+v", h)
	}
}

func TestFrameContentSizeIsAlwaysPresent(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 65791, 65792, 256 << 10, 1 << 20, 8 << 20} {
		src := corpus.Uniform(n, 0, 9, uint64(n))
		frame := decodes(t, src, Options{})
		var h zstd.Header
		if err := h.Decode(frame); err != nil {
			t.Fatal(err)
		}
		if !h.HasFCS || h.FrameContentSize != uint64(n) || !h.SingleSegment || h.HasCheckSum {
			t.Fatalf("%d bytes: header %+v", n, h)
		}
		want := map[int]int{0: 6, 1: 6, 255: 6, 256: 7, 65791: 7, 65792: 9, 256 << 10: 9, 1 << 20: 9, 8 << 20: 9}[n]
		if FrameHeaderSize(n) != want {
			t.Fatalf("%d bytes: header of %d bytes, want %d", n, FrameHeaderSize(n), want)
		}
	}
}

func TestTheChecksumOptionWritesXXH64(t *testing.T) {
	frame := decodes(t, corpus.Uniform(5000, 0, 7, 1), Options{Checksum: true})
	var h zstd.Header
	if err := h.Decode(frame); err != nil {
		t.Fatal(err)
	}
	if !h.HasCheckSum {
		t.Fatal("no checksum flag")
	}
	frame[len(frame)-1] ^= 1
	if _, err := decoder.DecodeAll(frame, nil); err == nil {
		t.Fatal("a corrupted checksum decoded")
	}
}

// The RFC's example tree (§4.2.1.2): literals 0..5 with lengths 1,2,3,0,4,4
// gives codes 1, 01, 001, -, 0000, 0001; the literals "ABEF" = 0,1,4,5 are
// then the 2-byte stream 01 0D.
func TestTheABEFGoldenVectorIs010D(t *testing.T) {
	var h huffEnc
	nb := [256]uint8{1, 2, 3, 0, 4, 4}
	h.setLengths(&nb)
	wantCodes := []uint16{1, 1, 1, 0, 0, 1}
	for s, c := range wantCodes {
		if s != 3 && h.code[s] != c {
			t.Fatalf("symbol %d: code %b, want %b", s, h.code[s], c)
		}
	}
	got := h.appendStream(nil, []byte{0, 1, 4, 5})
	if !bytes.Equal(got, []byte{0x01, 0x0D}) {
		t.Fatalf("stream % X, want 01 0D", got)
	}
}

func TestBlockChoices(t *testing.T) {
	type blk struct{ typ, size int }
	tests := []struct {
		name string
		src  []byte
		want blk
	}{
		{"a block of one distinct byte is RLE", bytes.Repeat([]byte{9}, 1000), blk{blockRLE, 1000}},
		{"a block under 64 bytes is raw", corpus.Uniform(63, 0, 1, 1), blk{blockRaw, 63}},
		{"uniform random bytes are raw", corpus.Uniform(MaxBlockSize, 0, 255, 1), blk{blockRaw, MaxBlockSize}},
		{"skewed bytes are compressed", corpus.Geometric(MaxBlockSize, 0.5, 1), blk{blockCompressed, -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			frame := decodes(t, tc.src, Options{})
			hs := FrameHeaderSize(len(tc.src))
			h := uint32(frame[hs]) | uint32(frame[hs+1])<<8 | uint32(frame[hs+2])<<16
			typ, size := int(h>>1&3), int(h>>3)
			if typ != tc.want.typ || (tc.want.size >= 0 && size != tc.want.size) {
				t.Fatalf("block type %d size %d, want %+v", typ, size, tc.want)
			}
		})
	}
}

func TestCodeLengthsAreCompleteAndLimitedTo11Bits(t *testing.T) {
	for _, tc := range corpus.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			var hist [256]uint32
			distinct := 0
			for _, b := range tc.Data[:min(len(tc.Data), MaxBlockSize)] {
				if hist[b] == 0 {
					distinct++
				}
				hist[b]++
			}
			if distinct < 2 {
				return
			}
			var pm packageMerge
			var nb [256]uint8
			pm.lengths(&hist, MaxHuffBits, &nb)
			kraft := 0
			for s, l := range nb {
				if (l == 0) != (hist[s] == 0) || l > MaxHuffBits {
					t.Fatalf("symbol %d count %d length %d", s, hist[s], l)
				}
				if l != 0 {
					kraft += 1 << (MaxHuffBits - l)
				}
			}
			if kraft != 1<<MaxHuffBits {
				t.Fatalf("Kraft sum %d/%d", kraft, 1<<MaxHuffBits)
			}
		})
	}
}

func TestTheLengthLimitBindsOnDeepTrees(t *testing.T) {
	var hist [256]uint32
	for _, b := range corpus.Fibonacci(25) {
		hist[b]++
	}
	var pm packageMerge
	var nb [256]uint8
	if got := pm.lengths(&hist, 30, &nb); got <= MaxHuffBits {
		t.Fatalf("unlimited depth %d: the case does not exercise the limit", got)
	}
	if got := pm.lengths(&hist, MaxHuffBits, &nb); got != MaxHuffBits {
		t.Fatalf("limited depth %d", got)
	}
}

func TestOutputIsAppendedToDst(t *testing.T) {
	src := corpus.Geometric(3000, 0.4, 3)
	prefix := []byte("prefix")
	out := Encode(append([]byte(nil), prefix...), src, Options{})
	if !bytes.Equal(out[:len(prefix)], prefix) || !bytes.Equal(out[len(prefix):], Encode(nil, src, Options{})) {
		t.Fatal("Encode does not append")
	}
}

func FuzzEncodeDecodes(f *testing.F) {
	// Seeds are cut to 20 KB to keep executions fast; the multi-block
	// cases are covered by TestEveryFrameDecodesWithKlauspost.
	for _, tc := range corpus.Cases() {
		f.Add(tc.Data[:min(len(tc.Data), 20000)])
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		decodes(t, src, Options{})
		decodes(t, src, Options{ElemSize: 2}) // the even grid
		decodes(t, src, Options{ElemSize: 1}) // the even grid, 8-byte matches
		decodes(t, src, Options{Level: 3})
	})
}

func TestATreeDescriptionThatCannotBeMadeFallsBackToRaw(t *testing.T) {
	// 256 symbols of length 8: direct weights cannot describe Max_Symbol
	// 255, and a single weight value cannot be FSE-coded.
	var h huffEnc
	var nb [256]uint8
	for s := range nb {
		nb[s] = 8
	}
	h.setLengths(&nb)
	if _, ok := h.appendTreeDesc(nil); ok {
		t.Fatal("a description was made for 256 equal weights")
	}
	if _, ok := h.appendLiteralsWithTable(nil, corpus.Uniform(2000, 0, 255, 1), false); ok {
		t.Fatal("literals were coded without a description")
	}
	// With Max_Symbol ≤ 128 the same situation uses direct weights.
	nb = [256]uint8{}
	for s := 0; s < 128; s++ {
		nb[s] = 7
	}
	h.setLengths(&nb)
	desc, ok := h.appendTreeDesc(nil)
	if !ok || desc[0] != 127+127 || len(desc) != 1+64 {
		t.Fatalf("direct description % X", desc[:min(len(desc), 4)])
	}
}

// The bytes are the contract with the GPU kernels: any change to them is a
// change of algorithm and must be made on both sides. The frames were checked
// with klauspost and with `zstd -t`.
func TestTheOutputBytesAreFixed(t *testing.T) {
	src := []byte("ABEFABEFAAAAAAAABBBBEEFFAAAABBAAAAAAAABBBBEEFFAAAABBAAAAAAAABBBBEEFFAAAABBA")
	want := []byte{
		0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x4B, // magic, Single_Segment, FCS 75
		0x4D, 0x01, 0x00, // last Compressed block of 41 bytes
		0x90, // Raw literals, 18 bytes (too few for Huffman)
		0x41, 0x42, 0x45, 0x46, 0x41, 0x42, 0x45, 0x46, 0x41, 0x42, 0x42, 0x42, 0x42, 0x45, 0x45, 0x46, 0x46, 0x41,
		0x04, // 4 sequences (6-byte matches at least)
		0xA8, // literal lengths, offsets, match lengths: FSE_Compressed_Mode
		// the three table descriptions, then the sequences' bitstream
		0x90, 0x52, 0x6C, 0x3E, 0x10, 0x48, 0x29, 0x1F, 0x10, 0x4C,
		0x37, 0xFF, 0xFF, 0xF3, 0x12, 0x48, 0xFF, 0x11, 0x82, 0x04,
	}
	if got := decodes(t, src, Options{}); !bytes.Equal(got, want) {
		t.Fatalf("frame\n% X\nwant\n% X", got, want)
	}
	// The corpus at each rung of the ladder: level 1 (the zero Options)
	// and level 3, whose frames were checked with `zstd -d` too.
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{}, "de7efea258f05477033a8e4675e83a47fdb56b5da6d45eb7228001936b0c246e"},
		{Options{Level: 3}, "ba97a0bae3b7a530341e10848708dda16102a73ef987ea445c4c6ab5095cec67"},
	} {
		h := sha256.New()
		for _, c := range corpus.Cases() {
			h.Write(Encode(nil, c.Data, tc.opt))
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != tc.want {
			t.Errorf("level %d: the corpus encodes to different bytes: sha256 %s", tc.opt.Level, got)
		}
	}
}

func TestTheMinimumMatchIsHeldAndStaysWithinTheSlotsBounds(t *testing.T) {
	for _, tc := range []struct {
		level, asked, want int
	}{
		{1, 0, 6}, {1, 3, 6}, {1, 5, 6}, {1, 6, 6}, {1, 7, 7}, {1, 8, 8}, {1, 40, 8},
		{3, 0, 5}, {3, 4, 5}, {3, 5, 5}, {3, 6, 6}, {3, 40, 8},
	} {
		if got := (Options{Level: tc.level, MinMatch: tc.asked}).ShortestMatch(); got != tc.want {
			t.Errorf("level %d, MinMatch %d: shortest match %d, want %d", tc.level, tc.asked, got, tc.want)
		}
	}
	for _, opt := range []Options{{MinMatch: 6}, {MinMatch: 7}, {MinMatch: 8}, {Level: 3}, {Level: 3, MinMatch: 7}} {
		mm := opt.ShortestMatch()
		var e encoder
		e.p.setRung(opt)
		seqs := 0
		for _, tc := range corpus.Cases() {
			e.p.startFrame(len(tc.Data))
			for off := 0; off < len(tc.Data); off += MaxBlockSize {
				end := min(off+MaxBlockSize, len(tc.Data))
				e.p.parseBlock(tc.Data, off, end)
				for _, s := range e.p.seqs {
					if s.matchLen < uint32(mm) {
						t.Fatalf("level %d, min match %d: %s holds a match of %d bytes", opt.Level, mm, tc.Name, s.matchLen)
					}
				}
				seqs += len(e.p.seqs)
				e.p.endBlock(tc.Data, off, end)
			}
			decodes(t, tc.Data, opt)
		}
		if seqs == 0 {
			t.Fatalf("level %d, min match %d: the corpus parsed to no sequences at all", opt.Level, mm)
		}
	}
}
