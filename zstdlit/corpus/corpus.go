// Package corpus holds the inputs zstdlit is tested and measured on: the
// edge-case corpus whose encoded bytes zstdlit pins with a SHA-256, and
// seeded 12-bit camera-like generators. It is an ordinary package, as
// net/http/httptest is, so that other packages' tests (the GPU encoder's,
// the pipeline's, the CLI's) feed exactly the bytes zstdlit was checked on.
//
// Every function is deterministic: the generators are seeded PCGs, so the
// same arguments give the same bytes. Changing what any of them returns
// changes zstdlit's pinned corpus hash, so do not; add new generators or
// cases instead.
package corpus

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/zspool/zspool/internal/synth"
)

// BlockSize is zstdlit.MaxBlockSize. It is repeated here because zstdlit's
// own tests import this package, which therefore cannot import zstdlit;
// zstdlit's tests check that the two agree.
const BlockSize = 128 << 10

// Case is one named input.
type Case struct {
	Name string
	Data []byte
}

// Cases is the edge-case corpus: block-type boundaries, the Huffman
// cut-off, one- and four-stream literals, 10-, 14- and 18-bit size
// formats, deep and wide trees, multi-block frames and 12-bit camera data.
// The order and the bytes are fixed (zstdlit pins the hash of their
// encodings).
func Cases() []Case {
	all := make([]byte, 4096)
	for i := range all {
		all[i] = byte(i)
	}
	return []Case{
		{"an empty input", nil},
		{"one byte", []byte{42}},
		{"five bytes of one symbol", []byte("aaaaa")},
		{"five distinct bytes", []byte("abcde")},
		{"a 63-byte block just under the Huffman cut-off", Uniform(63, 0, 3, 1)},
		{"a 64-byte block at the Huffman cut-off", Uniform(64, 0, 3, 1)},
		{"one symbol over a whole block", bytes.Repeat([]byte{7}, BlockSize)},
		{"one symbol over several blocks", bytes.Repeat([]byte{0}, 3*BlockSize+5)},
		{"two symbols", Uniform(5000, 10, 11, 2)},
		{"two symbols, heavily skewed", append(bytes.Repeat([]byte{1}, 10000), 200)},
		{"all 256 symbols once each", all[:256]},
		{"all 256 symbols evenly", all},
		{"all 256 symbols uniform random", Uniform(BlockSize, 0, 255, 3)},
		{"only symbols above 128", Uniform(20000, 129, 255, 4)},
		{"only symbols above 128, few", Uniform(2000, 200, 203, 4)},
		{"a geometric distribution p=0.5 (deep tree)", Geometric(100000, 0.5, 5)},
		{"a geometric distribution p=0.3", Geometric(100000, 0.3, 6)},
		{"a geometric distribution p=0.05 (wide)", Geometric(100000, 0.05, 7)},
		{"fibonacci counts over 20 symbols (depth limited to 11)", Fibonacci(20)},
		{"fibonacci counts over 25 symbols", Fibonacci(25)},
		{"1023 literals (one stream)", Uniform(1023, 0, 15, 8)},
		{"1024 literals (four streams)", Uniform(1024, 0, 15, 8)},
		{"1025 literals, a tail not a multiple of 4", Uniform(1025, 0, 15, 8)},
		{"1026 literals", Uniform(1026, 0, 15, 8)},
		{"1027 literals", Uniform(1027, 0, 15, 8)},
		{"16383 literals (14-bit sizes)", Uniform(16383, 0, 15, 8)},
		{"16384 literals (18-bit sizes)", Uniform(16384, 0, 15, 8)},
		{"a chunk not a multiple of 128 KiB with a 3-byte last block", Uniform(2*BlockSize+3, 0, 40, 9)},
		{"a chunk of about 1 MB", Uniform(1000003, 0, 40, 9)},
		{"12-bit gaussian camera data", Gaussian12(200000, 1500, 40, 10)},
		{"12-bit narrow gaussian camera data", Gaussian12(200000, 300, 3, 11)},
		{"12-bit uniform camera data", Uniform12(200000, 12)},
		{"12-bit dim sparse camera data", Dim12(200000, 13)},
		{"12-bit bright shot-noise camera data", Bright12(200000, 14)},
		// Matches: each case below reaches a part of the sequences coder.
		{"a two-byte pattern over two blocks (one long match per segment)", bytes.Repeat([]byte{0x64, 0}, BlockSize)},
		{"a 10-byte period (every sequence alike: RLE code modes)", bytes.Repeat(Uniform(10, 0, 255, 30), 20000)},
		{"a 10-byte period within one segment (one sequence: RLE literal lengths)", bytes.Repeat(Uniform(10, 0, 255, 36), 48)},
		{"a 7-byte period with sparse noise (repeat offsets)", Noisy(bytes.Repeat(Uniform(7, 0, 255, 31), 30000), 97, 32)},
		{"noise with a few repeated words (matches that do not pay)", RepeatedWords(BlockSize, 40, 33)},
		{"pattern runs between noise (literal lengths across segments)", Runs(10, 3000, 1500, 34)},
		{"12-bit dim sparse camera data over several blocks", Dim12(300000, 35)},
	}
}

// Noisy replaces one byte in every (about) 1/every of b with a random one.
func Noisy(b []byte, every int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	out := bytes.Clone(b)
	for i := range out {
		if r.IntN(every) == 0 {
			out[i] = byte(r.IntN(256))
		}
	}
	return out
}

// RepeatedWords is n random bytes into which count earlier 5- to 7-byte
// words are copied: matches too few to pay for their tables.
func RepeatedWords(n, count int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 8))
	b := Uniform(n, 0, 255, seed)
	for range count {
		at := 100 + r.IntN(n-200)
		l := 5 + r.IntN(3)
		copy(b[at:at+l], b[at-1-r.IntN(90):])
	}
	return b
}

// Runs alternates noise bytes of noise random bytes with run bytes of a
// two-byte pattern, k times: segments without matches between segments
// with them.
func Runs(k, noise, run int, seed uint64) []byte {
	var b []byte
	for i := range k {
		b = append(b, Uniform(noise, 0, 255, seed+uint64(i))...)
		b = append(b, bytes.Repeat([]byte{byte(i), 0x5A}, run/2)...)
	}
	return b
}

// RatioSetBytes is the size of each of RatioSets' sets.
const RatioSetBytes = 8 << 20

// Bench mix frames in RatioSets: 512×512 uint16, 512 KiB each.
const (
	benchMixSide  = 512
	benchMixFrame = benchMixSide * benchMixSide * 2
)

// RatioSets are the 8 MiB sets zstdlit's ratio comparison and benchmarks
// run on: three 12-bit camera signals, and the bench mix, which is what
// `zspool bench` converts (internal/synth's frames, kind synth.Mixed(i)
// and seed i for frame i, as cmd/zspool writes them) cut into 512×512
// frames.
func RatioSets() []Case {
	const n = RatioSetBytes / 2 // uint16 pixels per set
	return []Case{
		{"dim sparse", Dim12(n, 21)},
		{"bright shot-noise", Bright12(n, 22)},
		{"uniform", Uniform12(n, 23)},
		{"bench mix", BenchMix(RatioSetBytes / benchMixFrame)},
	}
}

// BenchMix is frames 0…frames−1 of 512×512 uint16 in the bench mix:
// frame i is synth.Mixed(i) seeded with i, the bytes cmd/zspool's
// synthetic raw files start with for that frame size.
func BenchMix(frames int) []byte {
	b := make([]byte, frames*benchMixFrame)
	for i := range frames {
		synth.FillFrame(b[i*benchMixFrame:(i+1)*benchMixFrame], synth.Mixed(int64(i)), uint64(i))
	}
	return b
}

// Geometric is n bytes where byte k has probability p(1−p)^k (capped at
// 255): a skewed distribution whose Huffman tree is deep for large p.
func Geometric(n int, p float64, seed uint64) []byte {
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

// Uniform is n bytes uniform over lo…hi.
func Uniform(n int, lo, hi int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(lo + r.IntN(hi-lo+1))
	}
	return b
}

// Fibonacci gives symbol i a count of Fib(i), shuffled: the deepest
// Huffman trees for the number of bytes.
func Fibonacci(symbols int) []byte {
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

// The 12-bit generators below take n in pixels and return n little-endian
// uint16 values (2n bytes), each in 0…4095.

// Gaussian12 is gaussian noise of mean and sd, rounded and clamped.
func Gaussian12(n int, mean, sd float64, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	v := make([]uint16, n)
	for i := range v {
		x := math.Round(mean + sd*r.NormFloat64())
		v[i] = uint16(min(max(x, 0), 4095))
	}
	return u16le(v)
}

// Uniform12 is uniform noise over 0…4095.
func Uniform12(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 4))
	v := make([]uint16, n)
	for i := range v {
		v[i] = uint16(r.IntN(4096))
	}
	return u16le(v)
}

// Dim12 is a dark frame: offset 100 with Poisson read noise (λ 1.5), and
// one pixel in 500 a bright event of up to 3000 more.
func Dim12(n int, seed uint64) []byte {
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

// Bright12 is shot noise around a bright level that varies slowly
// (2000 ± 1000, a sine over ~31,000 pixels).
func Bright12(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 6))
	v := make([]uint16, n)
	for i := range v {
		level := 2000 + 1000*math.Sin(float64(i)/5000)
		v[i] = uint16(min(poisson(r, level), 4095))
	}
	return u16le(v)
}

func u16le(vals []uint16) []byte {
	b := make([]byte, 2*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}

// poisson draws from Poisson(lambda): Knuth's product method for small
// lambda, the normal approximation above 30 where the product would take
// too many draws.
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
