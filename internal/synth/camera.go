package synth

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// Camera makes frames the way a fluorescence camera sees a sample: an
// expected photon count per pixel (cells as smooth blobs on a slowly
// varying background, bleaching and drifting from frame to frame), Poisson
// shot noise on it, a gain, an offset and gaussian read noise, rounded and
// clipped to the camera's bit depth. Every frame is a pure function of the
// camera and its index, so a file can be written in parallel and made
// again anywhere.
type Camera struct {
	Name          string
	Width, Height int
	Bits          int     // 12 (in uint16) or 8 (in uint8)
	Offset        float64 // ADU added to every pixel (a camera's bias)
	Gain          float64 // ADU per photon
	ReadNoise     float64 // ADU, standard deviation
	Background    float64 // photons per pixel at the centre of the field
	Vignette      float64 // fraction of the background lost at the corners
	Peak          float64 // photons at a cell's centre, before bleaching
	Cells         int
	CellRadius    float64 // pixels
	Bleach        float64 // fraction of the signal lost per frame
	Drift         float64 // pixels per frame along x
	Seed          uint64

	rate []float32 // expected signal photons per pixel, before drift and bleaching
	bg   []float32 // expected background photons per pixel
}

// The realistic sets: what issues and benchmarks name with --data.
func CameraBright(w, h int) *Camera {
	return (&Camera{Name: "bright", Width: w, Height: h, Bits: 12, Offset: 100, Gain: 1, ReadNoise: 1.6,
		Background: 60, Vignette: 0.3, Peak: 1500, Cells: w * h / 20000, CellRadius: 14, Bleach: 0.0005, Drift: 0.05, Seed: 1}).prepare()
}

// CameraDim is sparse, dim signal: most of the field a few photons above
// the offset.
func CameraDim(w, h int) *Camera {
	return (&Camera{Name: "dim", Width: w, Height: h, Bits: 12, Offset: 100, Gain: 1, ReadNoise: 1.6,
		Background: 2, Vignette: 0.3, Peak: 40, Cells: w * h / 60000, CellRadius: 10, Bleach: 0.001, Drift: 0.05, Seed: 2}).prepare()
}

// CameraFlat is a shot-noise-limited flat field: a bright, even
// illumination and nothing else.
func CameraFlat(w, h int) *Camera {
	return (&Camera{Name: "flat", Width: w, Height: h, Bits: 12, Offset: 100, Gain: 0.5, ReadNoise: 1.6,
		Background: 3000, Vignette: 0.1, Seed: 3}).prepare()
}

// Camera8 is a low-bit-depth camera: 8-bit values, cells on a dark field.
func Camera8(w, h int) *Camera {
	return (&Camera{Name: "8bit", Width: w, Height: h, Bits: 8, Offset: 10, Gain: 0.1, ReadNoise: 0.8,
		Background: 30, Vignette: 0.3, Peak: 1500, Cells: w * h / 20000, CellRadius: 14, Bleach: 0.0005, Drift: 0.05, Seed: 4}).prepare()
}

// Camera8Saturated is an 8-bit camera at five times Camera8's gain: the
// cells' centres clip at 255, and the background's noise spans a few
// values more. Runs of 255 and a busier background take another search
// than Camera8's dark field (zstdlit's window ladder).
func Camera8Saturated(w, h int) *Camera {
	return (&Camera{Name: "8bit-saturated", Width: w, Height: h, Bits: 8, Offset: 10, Gain: 0.5, ReadNoise: 0.8,
		Background: 30, Vignette: 0.3, Peak: 1500, Cells: w * h / 20000, CellRadius: 14, Bleach: 0.0005, Drift: 0.05, Seed: 5}).prepare()
}

// Cameras are the realistic sets, in the order benchmarks print them.
func Cameras(w, h int) []*Camera {
	return []*Camera{CameraDim(w, h), CameraBright(w, h), CameraFlat(w, h), Camera8(w, h), Camera8Saturated(w, h)}
}

// ElemSize is the bytes of one pixel.
func (c *Camera) ElemSize() int {
	if c.Bits <= 8 {
		return 1
	}
	return 2
}

// FrameBytes is the bytes of one frame.
func (c *Camera) FrameBytes() int64 { return int64(c.Width*c.Height) * int64(c.ElemSize()) }

// prepare lays out the sample: the cells' expected photons, summed blob by
// blob, and the vignetted background.
func (c *Camera) prepare() *Camera {
	w, h := c.Width, c.Height
	c.rate = make([]float32, w*h)
	c.bg = make([]float32, w*h)
	rng := rand.New(rand.NewPCG(c.Seed, 0x5851f42d4c957f2d))
	for range c.Cells {
		cx, cy := rng.Float64()*float64(w), rng.Float64()*float64(h)
		r := c.CellRadius * (0.6 + 0.8*rng.Float64())
		peak := c.Peak * (0.3 + 0.7*rng.Float64())
		x0, x1 := max(0, int(cx-3*r)), min(w, int(cx+3*r)+1)
		y0, y1 := max(0, int(cy-3*r)), min(h, int(cy+3*r)+1)
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				dx, dy := float64(x)-cx, float64(y)-cy
				c.rate[y*w+x] += float32(peak * math.Exp(-(dx*dx+dy*dy)/(2*r*r)))
			}
		}
	}
	for y := range h {
		for x := range w {
			dx, dy := 2*float64(x)/float64(w)-1, 2*float64(y)/float64(h)-1
			c.bg[y*w+x] = float32(c.Background * (1 - c.Vignette*(dx*dx+dy*dy)/2))
		}
	}
	return c
}

// Frame writes frame t (little-endian) into dst, which holds FrameBytes.
func (c *Camera) Frame(dst []byte, t int64) {
	w, h := c.Width, c.Height
	rng := rand.New(rand.NewPCG(c.Seed^uint64(t)*0x9e3779b97f4a7c15, uint64(t)))
	fade := float32(math.Pow(1-c.Bleach, float64(t)))
	shift := int(math.Round(c.Drift * float64(t)))
	hi := float64(int(1)<<c.Bits - 1)
	rn2 := c.ReadNoise * c.ReadNoise
	for y := range h {
		row := y * w
		for x := range w {
			sx := x - shift
			sx = ((sx % w) + w) % w
			lambda := float64(c.bg[row+x] + fade*c.rate[row+sx])
			var v float64
			if lambda < poissonExact {
				v = c.Offset + c.Gain*float64(photons(rng, lambda)) + c.ReadNoise*rng.NormFloat64()
			} else {
				// Shot and read noise in one draw: both are gaussian here.
				v = c.Offset + c.Gain*lambda + math.Sqrt(c.Gain*c.Gain*lambda+rn2)*rng.NormFloat64()
			}
			v = min(max(math.Round(v), 0), hi)
			if c.Bits <= 8 {
				dst[row+x] = byte(v)
			} else {
				binary.LittleEndian.PutUint16(dst[2*(row+x):], uint16(v))
			}
		}
	}
}

// poissonExact is the mean below which photon counts are drawn exactly:
// the dark regions, where the Poisson distribution's skew and its zeros
// show. Above it the normal approximation is indistinguishable.
const poissonExact = 16

// photons draws a Poisson count of a small mean exactly (Knuth's product of
// uniforms).
func photons(r *rand.Rand, lambda float64) int {
	if lambda <= 0 {
		return 0
	}
	l := math.Exp(-lambda)
	k, p := 0, r.Float64()
	for p > l {
		k++
		p *= r.Float64()
	}
	return k
}

// ZarrChunks cuts the camera's first 16 frames into 16×256×256 chunks,
// each one contiguous run of its pixels as a Zarr writer stores it (C
// order), row of tiles by row of tiles. Width and height must be
// multiples of 256 for every pixel to land in a chunk.
func (c *Camera) ZarrChunks() [][]byte {
	const depth, side = 16, 256
	fb := c.FrameBytes()
	frames := make([]byte, depth*fb)
	for t := range int64(depth) {
		c.Frame(frames[t*fb:(t+1)*fb], t)
	}
	e := c.ElemSize()
	row := c.Width * e
	var chunks [][]byte
	for y0 := 0; y0+side <= c.Height; y0 += side {
		for x0 := 0; x0+side <= c.Width; x0 += side {
			ch := make([]byte, 0, depth*side*side*e)
			for t := range int64(depth) {
				for y := y0; y < y0+side; y++ {
					off := t*fb + int64(y*row+x0*e)
					ch = append(ch, frames[off:off+int64(side*e)]...)
				}
			}
			chunks = append(chunks, ch)
		}
	}
	return chunks
}
