package synth

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

func stats(c *Camera, frame []byte) (mean, sd float64, lo, hi int) {
	n := c.Width * c.Height
	lo = math.MaxInt
	var sum, sum2 float64
	for i := range n {
		var v int
		if c.ElemSize() == 1 {
			v = int(frame[i])
		} else {
			v = int(binary.LittleEndian.Uint16(frame[2*i:]))
		}
		sum += float64(v)
		sum2 += float64(v) * float64(v)
		lo, hi = min(lo, v), max(hi, v)
	}
	mean = sum / float64(n)
	return mean, math.Sqrt(sum2/float64(n) - mean*mean), lo, hi
}

func TestCameraFramesLookLikeTheirSample(t *testing.T) {
	cases := []struct {
		cam                   *Camera
		meanLo, meanHi        float64
		minAtLeast, maxAtMost int
	}{
		// Dim: mostly a few photons over the 100 ADU offset; read noise
		// and cells reach a little further.
		{CameraDim(256, 256), 100, 106, 90, 200},
		// Bright: cells of hundreds of photons on a 60-photon background.
		{CameraBright(256, 256), 150, 400, 100, 4095},
		// Flat: 3000 photons at gain 0.5 is 1600 ADU, ±27 of shot noise.
		{CameraFlat(256, 256), 1450, 1650, 1300, 1800},
		// 8-bit: within a byte, above the offset.
		{Camera8(256, 256), 12, 60, 5, 255},
		// 8-bit saturated: a 15 ADU background over the offset, cells
		// clipped at 255.
		{Camera8Saturated(256, 256), 20, 80, 10, 255},
	}
	for _, tc := range cases {
		t.Run(tc.cam.Name, func(t *testing.T) {
			f := make([]byte, tc.cam.FrameBytes())
			tc.cam.Frame(f, 0)
			mean, sd, lo, hi := stats(tc.cam, f)
			if mean < tc.meanLo || mean > tc.meanHi || lo < tc.minAtLeast || hi > tc.maxAtMost || sd == 0 {
				t.Errorf("mean %.1f sd %.1f range %d…%d; want mean in %.0f…%.0f, range within %d…%d",
					mean, sd, lo, hi, tc.meanLo, tc.meanHi, tc.minAtLeast, tc.maxAtMost)
			}
		})
	}
}

func TestCameraFramesAreDeterministicAndDiffer(t *testing.T) {
	a, b := CameraBright(128, 128), CameraBright(128, 128)
	f0, g0, f1 := make([]byte, a.FrameBytes()), make([]byte, a.FrameBytes()), make([]byte, a.FrameBytes())
	a.Frame(f0, 7)
	b.Frame(g0, 7)
	a.Frame(f1, 8)
	if !bytes.Equal(f0, g0) {
		t.Error("the same frame of the same camera differs between two cameras")
	}
	if bytes.Equal(f0, f1) {
		t.Error("two frames are identical: no noise")
	}
}

func TestShotNoiseHasPoissonVariance(t *testing.T) {
	// Flat field at gain 0.5: variance is 0.25·λ + read noise².
	c := CameraFlat(512, 512)
	f := make([]byte, c.FrameBytes())
	c.Frame(f, 0)
	_, sd, _, _ := stats(c, f)
	// The vignette adds a spread of its own; the noise alone is ~27 ADU.
	if sd < 20 || sd > 80 {
		t.Errorf("flat field sd %.1f ADU, want about 27 (shot) plus the vignette", sd)
	}
}
