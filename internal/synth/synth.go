// Package synth makes camera-like test data: 12-bit values in uint16
// frames, as gaussian noise around a level, uniform noise, or a constant —
// the three kinds real acquisitions mix.
package synth

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// Kind is one kind of synthetic frame.
type Kind int

const (
	Gaussian Kind = iota // 12-bit gaussian: mean 2048, sigma 256, clamped
	Uniform              // uniform over 0…4095
	Constant             // one value everywhere
)

// Mixed is the bench mix: frame i has kind i % 3.
func Mixed(frame int64) Kind { return Kind(frame % 3) }

// FillFrame writes one little-endian uint16 frame of the given kind into
// dst (len(dst)/2 pixels), seeded by seed so every run makes the same bytes.
func FillFrame(dst []byte, kind Kind, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	n := len(dst) / 2
	switch kind {
	case Gaussian:
		for i := 0; i < n; i++ {
			v := math.Round(2048 + 256*rng.NormFloat64())
			v = min(max(v, 0), 4095)
			binary.LittleEndian.PutUint16(dst[2*i:], uint16(v))
		}
	case Uniform:
		i := 0
		for ; i+4 <= n; i += 4 {
			r := rng.Uint64()
			for k := range 4 {
				binary.LittleEndian.PutUint16(dst[2*(i+k):], uint16(r>>(16*k))&0x0fff)
			}
		}
		for ; i < n; i++ {
			binary.LittleEndian.PutUint16(dst[2*i:], uint16(rng.Uint32())&0x0fff)
		}
	case Constant:
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(dst[2*i:], 100)
		}
	}
}
