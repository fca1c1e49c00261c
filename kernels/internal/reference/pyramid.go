package reference

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zarr"
)

// PyramidShape is a multiscale test case: dims (size, chunk, chunks per
// shard) and which of them are space dims (downsampled).
type PyramidShape struct {
	Name   string
	Dims   [][3]int64
	Space  []bool
	Levels int // multiscale.levels: 0 for as many as the shape calls for
}

// PyramidShapes are the multiscale shapes of the CPU engine's pyramid
// tests (cmd/zspool's pyramidShapes): odd sizes, a dim of size 1, 1-D, and
// z-stacks whose size 2^l does not divide.
func PyramidShapes() []PyramidShape {
	f, t := false, true
	return []PyramidShape{
		{"ragged_everywhere", [][3]int64{{5, 2, 2}, {7, 3, 2}, {9, 4, 2}}, []bool{f, t, t}, 0},
		{"inner_not_multiple", [][3]int64{{3, 1, 1}, {10, 4, 2}, {8, 8, 1}}, []bool{f, t, t}, 0},
		{"grid_not_multiple_of_shard", [][3]int64{{4, 1, 1}, {9, 3, 2}, {9, 3, 2}}, []bool{f, t, t}, 0},
		{"four_d_channels", [][3]int64{{6, 2, 2}, {3, 1, 3}, {37, 8, 2}, {33, 8, 2}}, []bool{f, f, t, t}, 0},
		{"size_one_dim", [][3]int64{{3, 1, 1}, {1, 1, 1}, {13, 4, 2}}, []bool{f, t, t}, 0},
		{"one_d", [][3]int64{{10003, 256, 4}}, []bool{t}, 0},
		{"z_stack", [][3]int64{{11, 1, 2}, {9, 4, 1}, {10, 4, 2}}, []bool{t, t, t}, 0},
		{"z_stack_thick_chunks", [][3]int64{{23, 3, 2}, {12, 4, 2}, {5, 2, 2}}, []bool{t, t, t}, 0},
	}
}

// ResumableZStack is a z-stack with few enough levels that a resume point
// (Plan.ResumeAlign) falls inside its data, for tests that start a
// conversion mid-stream.
func ResumableZStack() PyramidShape {
	return PyramidShape{"z_stack_resumable", [][3]int64{{37, 2, 1}, {9, 4, 1}, {10, 4, 2}}, []bool{true, true, true}, 3}
}

// Elems is the element count of the whole array.
func (s PyramidShape) Elems() int64 {
	n := int64(1)
	for _, d := range s.Dims {
		n *= d[0]
	}
	return n
}

// DTypes are every manifest dtype.
var DTypes = []zarr.DType{"uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64"}

// Methods are every multiscale method.
var Methods = []string{"mean", "min", "max", "decimate"}

// PyramidManifest is the manifest document of a pyramid case.
func PyramidManifest(s PyramidShape, name string, dt zarr.DType, method string, bigEndian bool, codec string) []byte {
	dims := make([]map[string]any, len(s.Dims))
	for d, dm := range s.Dims {
		typ := "other"
		if s.Space[d] {
			typ = "space"
		}
		dims[d] = map[string]any{"name": string(rune('a' + d)), "type": typ, "size": dm[0], "chunk": dm[1], "shard": dm[2]}
	}
	ms := map[string]any{"method": method}
	if s.Levels > 0 {
		ms["levels"] = s.Levels
	}
	m := map[string]any{"version": 1, "name": name, "data": name + ".raw", "dtype": string(dt), "dimensions": dims,
		"multiscale": ms, "compression": map[string]any{"codec": codec}}
	if bigEndian {
		m["byte_order"] = "big"
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// PyramidPlan parses a pyramid case's manifest and plans it.
func PyramidPlan(s PyramidShape, name string, dt zarr.DType, method string, bigEndian bool, codec string) (*pipeline.Plan, error) {
	m, err := config.ParseManifest(PyramidManifest(s, name, dt, method, bigEndian, codec), name)
	if err != nil {
		return nil, err
	}
	return pipeline.NewPlan(m, name+".raw", s.Elems()*int64(dt.Size()), pipeline.Options{})
}

// PyramidRaw makes n random elements of dt in the given byte order that
// stress every reduction: runs of fill (absent chunks); for floats, now
// and then a special value (NaNs of either sign, quiet or signalling, with
// random payloads; infinities, whose opposite sum is the invalid NaN;
// subnormals; −0); for 64-bit integers, values near both limits, whose
// sums overflow 64 bits.
func PyramidRaw(rng *rand.Rand, dt zarr.DType, bigEndian bool, n int64) []byte {
	var order binary.ByteOrder = binary.LittleEndian
	if bigEndian {
		order = binary.BigEndian
	}
	size := dt.Size()
	raw := make([]byte, n*int64(size))
	for i := range n {
		b := raw[i*int64(size):]
		var u uint64
		special := rng.IntN(10) == 0
		switch dt {
		case "float32":
			u = uint64(math.Float32bits(float32(rng.NormFloat64() * 1000)))
			if special {
				u = uint64([]uint32{0x7f800000 | (1 + rng.Uint32N(1<<23-1)), 0xff800000 | (1 + rng.Uint32N(1<<23-1)),
					0x7f800000, 0xff800000, 0x80000000, 1 + rng.Uint32N(1<<23-1), 0x7f7fffff}[rng.IntN(7)])
			}
		case "float64":
			u = math.Float64bits(rng.NormFloat64() * 1e6)
			if special {
				u = []uint64{0x7ff0000000000000 | (1 + rng.Uint64N(1<<52-1)), 0xfff0000000000000 | (1 + rng.Uint64N(1<<52-1)),
					0x7ff0000000000000, 0xfff0000000000000, 1 << 63, 1 + rng.Uint64N(1<<52-1), math.Float64bits(math.MaxFloat64)}[rng.IntN(7)]
			}
		case "uint64":
			u = math.MaxUint64 - uint64(rng.IntN(1000))
		case "int64":
			u = 1<<63 + uint64(rng.IntN(1000))
			if rng.IntN(2) == 0 {
				u = math.MaxInt64 - uint64(rng.IntN(1000))
			}
		default:
			u = rng.Uint64()
		}
		if rng.IntN(5) == 0 {
			u = 0
		}
		pipeline.StoreUint(order, b, size, u)
	}
	// A stretch of fill, so whole chunks come out absent.
	if n > 4 {
		lo := rng.Int64N(n / 2)
		clear(raw[lo*int64(size) : (lo+n/4)*int64(size)])
	}
	return raw
}

// ResumeEpoch is the first epoch a conversion of p can resume at, when
// that falls on an epoch boundary inside the data (else ok is false).
func ResumeEpoch(p *pipeline.Plan) (first int64, ok bool) {
	align := p.ResumeAlign()
	first = align / p.EpochFrames()
	return first, align%p.EpochFrames() == 0 && first < p.Epochs()
}
