package zstdlit

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/zstd"
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

func geometric(n int, p float64, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		k := 0
		for k < 255 && r.Float64() > p {
			k++
		}
		b[i] = byte(k)
	}
	return b
}

func uniform(n int, lo, hi int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(lo + r.IntN(hi-lo+1))
	}
	return b
}

// fibonacci gives symbol i a count of Fib(i): the deepest Huffman trees.
func fibonacci(symbols int) []byte {
	var b []byte
	f0, f1 := 1, 1
	for s := 0; s < symbols; s++ {
		b = append(b, bytes.Repeat([]byte{byte(s)}, f0)...)
		f0, f1 = f1, f0+f1
	}
	r := rand.New(rand.NewPCG(7, 7))
	r.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
	return b
}

func u16le(vals []uint16) []byte {
	b := make([]byte, 2*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}

func gaussian12(n int, mean, sd float64, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	v := make([]uint16, n)
	for i := range v {
		x := math.Round(mean + sd*r.NormFloat64())
		v[i] = uint16(min(max(x, 0), 4095))
	}
	return u16le(v)
}

func uniform12(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 4))
	v := make([]uint16, n)
	for i := range v {
		v[i] = uint16(r.IntN(4096))
	}
	return u16le(v)
}

func poisson(r *rand.Rand, lambda float64) int {
	if lambda > 30 {
		return int(math.Max(0, math.Round(lambda+math.Sqrt(lambda)*r.NormFloat64())))
	}
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// dim12: a dark frame, offset 100 with read noise, sparse bright events.
func dim12(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 5))
	v := make([]uint16, n)
	for i := range v {
		x := 100 + poisson(r, 1.5)
		if r.IntN(500) == 0 {
			x += r.IntN(3000)
		}
		v[i] = uint16(min(x, 4095))
	}
	return u16le(v)
}

// bright12: shot noise around a bright, slowly varying level.
func bright12(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 6))
	v := make([]uint16, n)
	for i := range v {
		level := 2000 + 1000*math.Sin(float64(i)/5000)
		v[i] = uint16(min(poisson(r, level), 4095))
	}
	return u16le(v)
}

type corpusCase struct {
	name string
	data []byte
}

func corpus() []corpusCase {
	all := make([]byte, 4096)
	for i := range all {
		all[i] = byte(i)
	}
	tail := uniform(1000003, 0, 40, 9)
	return []corpusCase{
		{"an empty input", nil},
		{"one byte", []byte{42}},
		{"five bytes of one symbol", []byte("aaaaa")},
		{"five distinct bytes", []byte("abcde")},
		{"a 63-byte block just under the Huffman cut-off", uniform(63, 0, 3, 1)},
		{"a 64-byte block at the Huffman cut-off", uniform(64, 0, 3, 1)},
		{"one symbol over a whole block", bytes.Repeat([]byte{7}, MaxBlockSize)},
		{"one symbol over several blocks", bytes.Repeat([]byte{0}, 3*MaxBlockSize+5)},
		{"two symbols", uniform(5000, 10, 11, 2)},
		{"two symbols, heavily skewed", append(bytes.Repeat([]byte{1}, 10000), 200)},
		{"all 256 symbols once each", all[:256]},
		{"all 256 symbols evenly", all},
		{"all 256 symbols uniform random", uniform(MaxBlockSize, 0, 255, 3)},
		{"only symbols above 128", uniform(20000, 129, 255, 4)},
		{"only symbols above 128, few", uniform(2000, 200, 203, 4)},
		{"a geometric distribution p=0.5 (deep tree)", geometric(100000, 0.5, 5)},
		{"a geometric distribution p=0.3", geometric(100000, 0.3, 6)},
		{"a geometric distribution p=0.05 (wide)", geometric(100000, 0.05, 7)},
		{"fibonacci counts over 20 symbols (depth limited to 11)", fibonacci(20)},
		{"fibonacci counts over 25 symbols", fibonacci(25)},
		{"1023 literals (one stream)", uniform(1023, 0, 15, 8)},
		{"1024 literals (four streams)", uniform(1024, 0, 15, 8)},
		{"1025 literals, a tail not a multiple of 4", uniform(1025, 0, 15, 8)},
		{"1026 literals", uniform(1026, 0, 15, 8)},
		{"1027 literals", uniform(1027, 0, 15, 8)},
		{"16383 literals (14-bit sizes)", uniform(16383, 0, 15, 8)},
		{"16384 literals (18-bit sizes)", uniform(16384, 0, 15, 8)},
		{"a chunk not a multiple of 128 KiB with a 3-byte last block", uniform(2*MaxBlockSize+3, 0, 40, 9)},
		{"a chunk of about 1 MB", tail},
		{"12-bit gaussian camera data", gaussian12(200000, 1500, 40, 10)},
		{"12-bit narrow gaussian camera data", gaussian12(200000, 300, 3, 11)},
		{"12-bit uniform camera data", uniform12(200000, 12)},
		{"12-bit dim sparse camera data", dim12(200000, 13)},
		{"12-bit bright shot-noise camera data", bright12(200000, 14)},
	}
}

func TestEveryFrameDecodesWithKlauspost(t *testing.T) {
	for _, tc := range corpus() {
		t.Run(tc.name, func(t *testing.T) {
			decodes(t, tc.data, Options{})
			decodes(t, tc.data, Options{Checksum: true})
		})
	}
}

func TestFramesOver8MiBUseA128KiBWindowAndKeepTheContentSize(t *testing.T) {
	src := gaussian12((8<<20)/2+100, 1000, 20, 1)
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
		src := uniform(n, 0, 9, uint64(n))
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
	frame := decodes(t, uniform(5000, 0, 7, 1), Options{Checksum: true})
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
		{"a block under 64 bytes is raw", uniform(63, 0, 1, 1), blk{blockRaw, 63}},
		{"uniform random bytes are raw", uniform(MaxBlockSize, 0, 255, 1), blk{blockRaw, MaxBlockSize}},
		{"skewed bytes are compressed", geometric(MaxBlockSize, 0.5, 1), blk{blockCompressed, -1}},
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
	for _, tc := range corpus() {
		t.Run(tc.name, func(t *testing.T) {
			var hist [256]uint32
			distinct := 0
			for _, b := range tc.data[:min(len(tc.data), MaxBlockSize)] {
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
	for _, b := range fibonacci(25) {
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
	src := geometric(3000, 0.4, 3)
	prefix := []byte("prefix")
	out := Encode(append([]byte(nil), prefix...), src, Options{})
	if !bytes.Equal(out[:len(prefix)], prefix) || !bytes.Equal(out[len(prefix):], Encode(nil, src, Options{})) {
		t.Fatal("Encode does not append")
	}
}

func FuzzEncodeDecodes(f *testing.F) {
	// Seeds are cut to 20 KB to keep executions fast; the multi-block
	// cases are covered by TestEveryFrameDecodesWithKlauspost.
	for _, tc := range corpus() {
		f.Add(tc.data[:min(len(tc.data), 20000)])
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		decodes(t, src, Options{})
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
	if _, ok := h.appendLiteralsWithTable(nil, uniform(2000, 0, 255, 1)); ok {
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
		0xE5, 0x00, 0x00, // last Compressed block of 28 bytes
		0xB2, 0x04, 0x06, // Huffman literals, 1 stream, 75 -> 24 bytes
		0x07, 0xD0, 0xE7, 0x40, 0x25, 0x00, 0x5A, 0x02, // FSE weights, 7 bytes
		0xEB, 0x13, 0xA0, 0xEA, 0xBF, 0x3E, 0x01, 0xAA, 0xFE, 0xEB, 0x13, 0xA0, 0xEA, 0x3F, 0x68, 0xD0,
		0x00, // no sequences
	}
	if got := decodes(t, src, Options{}); !bytes.Equal(got, want) {
		t.Fatalf("frame\n% X\nwant\n% X", got, want)
	}
	h := sha256.New()
	for _, tc := range corpus() {
		h.Write(Encode(nil, tc.data, Options{}))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != "e90f1b97ebe960ed0b0e4f4b2f753a4de33e422c5775a74dd73509c64c62718d" {
		t.Fatalf("the corpus encodes to different bytes: sha256 %s", got)
	}
}
