package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zarr"
)

// refArray is a dense array decoded to exact values: big integers for
// integer dtypes, float64 for floats.
type refArray struct {
	shape []int64
	ints  []*big.Int
	flts  []float64
}

func decodeRef(raw []byte, dtype string, big_ bool, shape []int64) refArray {
	var order binary.ByteOrder = binary.LittleEndian
	if big_ {
		order = binary.BigEndian
	}
	size := zarr.DType(dtype).Size()
	n := int64(len(raw) / size)
	a := refArray{shape: shape}
	for i := int64(0); i < n; i++ {
		b := raw[i*int64(size):]
		u := pipeline.LoadUint(order, b, size)
		switch dtype {
		case "float32":
			a.flts = append(a.flts, float64(math.Float32frombits(uint32(u))))
		case "float64":
			a.flts = append(a.flts, math.Float64frombits(u))
		case "int8":
			a.ints = append(a.ints, big.NewInt(int64(int8(u))))
		case "int16":
			a.ints = append(a.ints, big.NewInt(int64(int16(u))))
		case "int32":
			a.ints = append(a.ints, big.NewInt(int64(int32(u))))
		case "int64":
			a.ints = append(a.ints, big.NewInt(int64(u)))
		default:
			a.ints = append(a.ints, new(big.Int).SetUint64(u))
		}
	}
	return a
}

func (a refArray) encode(dtype string, big_ bool) []byte {
	var order binary.ByteOrder = binary.LittleEndian
	if big_ {
		order = binary.BigEndian
	}
	size := zarr.DType(dtype).Size()
	n := len(a.ints) + len(a.flts)
	out := make([]byte, n*size)
	for i := range n {
		var u uint64
		switch dtype {
		case "float32":
			u = uint64(math.Float32bits(float32(a.flts[i])))
		case "float64":
			u = math.Float64bits(a.flts[i])
		default:
			if a.ints[i].Sign() < 0 {
				u = uint64(a.ints[i].Int64())
			} else {
				u = a.ints[i].Uint64()
			}
		}
		b := out[i*size:]
		pipeline.StoreUint(order, b, size, u)
	}
	return out
}

// downsampleRef is the definition, written as plainly as possible: every
// output coordinate reduces the in-bounds input elements of its box, in C
// order of the box (the order the float sum is taken in).
func downsampleRef(in refArray, half []bool, method string, isFloat bool) refArray {
	r := len(in.shape)
	out := refArray{shape: make([]int64, r)}
	for d := range r {
		out.shape[d] = in.shape[d]
		if half[d] {
			out.shape[d] = (in.shape[d] + 1) / 2
		}
	}
	forEachCoord(out.shape, func(o []int64) {
		var box [][]int64
		lo, hi := make([]int64, r), make([]int64, r)
		for d := range r {
			lo[d], hi[d] = o[d], o[d]+1
			if half[d] {
				lo[d], hi[d] = 2*o[d], min(2*o[d]+2, in.shape[d])
			}
		}
		ext := make([]int64, r)
		for d := range r {
			ext[d] = hi[d] - lo[d]
		}
		forEachCoord(ext, func(x []int64) {
			c := make([]int64, r)
			for d := range r {
				c[d] = lo[d] + x[d]
			}
			box = append(box, c)
		})
		idx := func(c []int64) int64 {
			var v int64
			for d := range r {
				v = v*in.shape[d] + c[d]
			}
			return v
		}
		if isFloat {
			var acc float64
			for k, c := range box {
				v := in.flts[idx(c)]
				switch {
				case method == "mean":
					acc += v
				case k == 0 || (method == "min" && v < acc) || (method == "max" && v > acc):
					if method != "decimate" || k == 0 {
						acc = v
					}
				}
			}
			if method == "mean" {
				acc /= float64(len(box))
			}
			out.flts = append(out.flts, acc)
			return
		}
		acc := new(big.Int)
		for k, c := range box {
			v := in.ints[idx(c)]
			switch {
			case method == "mean":
				acc.Add(acc, v)
			case k == 0:
				acc.Set(v)
			case method == "min" && v.Cmp(acc) < 0, method == "max" && v.Cmp(acc) > 0:
				acc.Set(v)
			}
		}
		if method == "mean" {
			// big.Int.Div is Euclidean: floor for a positive divisor.
			acc.Div(acc, big.NewInt(int64(len(box))))
		}
		out.ints = append(out.ints, acc)
	})
	return out
}

func forEachCoord(ext []int64, fn func([]int64)) {
	c := make([]int64, len(ext))
	for _, e := range ext {
		if e == 0 {
			return
		}
	}
	for {
		fn(c)
		d := len(c) - 1
		for ; d >= 0; d-- {
			c[d]++
			if c[d] < ext[d] {
				break
			}
			c[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

type pyramidCase struct {
	name  string
	dims  []dimSpec
	space []bool // which dims are space (downsampled)
}

var pyramidShapes = []pyramidCase{
	{"ragged_everywhere", []dimSpec{{5, 2, 2}, {7, 3, 2}, {9, 4, 2}}, []bool{false, true, true}},
	{"inner_not_multiple", []dimSpec{{3, 1, 1}, {10, 4, 2}, {8, 8, 1}}, []bool{false, true, true}},
	{"grid_not_multiple_of_shard", []dimSpec{{4, 1, 1}, {9, 3, 2}, {9, 3, 2}}, []bool{false, true, true}},
	{"four_d_channels", []dimSpec{{6, 2, 2}, {3, 1, 3}, {37, 8, 2}, {33, 8, 2}}, []bool{false, false, true, true}},
	{"size_one_dim", []dimSpec{{3, 1, 1}, {1, 1, 1}, {13, 4, 2}}, []bool{false, true, true}},
	{"one_d", []dimSpec{{10003, 256, 4}}, []bool{true}},
	// A z-stack: dim 0 is space, so level l folds 2^l epochs; 11 planes
	// make 2^l not divide the size at every level.
	{"z_stack", []dimSpec{{11, 1, 2}, {9, 4, 1}, {10, 4, 2}}, []bool{true, true, true}},
	{"z_stack_thick_chunks", []dimSpec{{23, 3, 2}, {12, 4, 2}, {5, 2, 2}}, []bool{true, true, true}},
}

func pyramidAcquisition(name, dtype string, pc pyramidCase, method string) *acquisition {
	a := newAcquisition(name, dtype, pc.dims)
	for d, dm := range dims(a) {
		if pc.space[d] {
			dm["type"] = "space"
		} else {
			dm["type"] = "other"
		}
	}
	a.manifest["multiscale"] = map[string]any{"method": method}
	return a
}

// fillExtreme makes random values that stress wide accumulation: 64-bit
// integers near their limits overflow any 64-bit sum.
func fillExtreme(a *acquisition, seed uint64, n int64) {
	a.randomRaw(seed, n)
	dt := a.manifest["dtype"].(string)
	if dt != "uint64" && dt != "int64" {
		return
	}
	rng := rand.New(rand.NewPCG(seed, 9))
	for i := int64(0); i < n; i++ {
		v := math.MaxUint64 - uint64(rng.IntN(1000))
		if dt == "int64" {
			v = 1<<63 + uint64(rng.IntN(1000)) // near MinInt64
			if rng.IntN(2) == 0 {
				v = math.MaxInt64 - uint64(rng.IntN(1000))
			}
		}
		binary.LittleEndian.PutUint64(a.raw[i*8:], v)
	}
}

func convertAndOpen(t *testing.T, a *acquisition) *zarr.Dataset {
	t.Helper()
	spool, dest := t.TempDir(), t.TempDir()
	mp := a.write(t, spool)
	if _, stderr, err := zspool(t, "convert", mp, "--dest", dest, "--quiet"); err != nil {
		t.Fatalf("convert: %v\n%s", err, stderr)
	}
	out, stderr, err := zspool(t, "verify", filepath.Join(dest, a.name+".ome.zarr"), "--raw", filepath.Join(spool, a.name+".raw"), "--quiet")
	if err != nil {
		t.Fatalf("verify: %v\n%s%s", err, out, stderr)
	}
	ds, err := zarr.Open(context.Background(), localfs.New(dest), a.name+".ome.zarr")
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestEveryPyramidLevelEqualsThePlainLoopReference(t *testing.T) {
	dtypes := []string{"uint8", "int8", "uint16", "int16", "int32", "uint64", "int64", "float32", "float64"}
	for _, method := range []string{"mean", "min", "max", "decimate"} {
		for _, pc := range pyramidShapes {
			for i, dt := range dtypes {
				if testing.Short() && i%3 != 0 {
					continue
				}
				name := fmt.Sprintf("%s_%s_%s", method, pc.name, dt)
				t.Run(name, func(t *testing.T) {
					a := pyramidAcquisition(name, dt, pc, method)
					bigEndian := i%2 == 1
					if bigEndian {
						a.manifest["byte_order"] = "big"
					}
					fillExtreme(a, uint64(i+7), elems(pc.dims))
					ds := convertAndOpen(t, a)
					if len(ds.Levels) < 2 {
						t.Fatalf("%d levels, want a pyramid", len(ds.Levels))
					}
					shape := make([]int64, len(pc.dims))
					for d, dm := range pc.dims {
						shape[d] = dm.size
					}
					isFloat := dt == "float32" || dt == "float64"
					ref := decodeRef(a.raw, dt, bigEndian, shape)
					for l, lv := range ds.Levels {
						if l > 0 {
							// The cascade starts from the stored level,
							// so float32 values are rounded before the
							// next level is reduced from them.
							ref = downsampleRef(ref, pc.space, method, isFloat)
							if dt == "float32" {
								for k, v := range ref.flts {
									ref.flts[k] = float64(float32(v))
								}
							}
						}
						got, err := lv.ReadAll(context.Background())
						if err != nil {
							t.Fatalf("level %d: %v", l, err)
						}
						if want := ref.encode(dt, bigEndian); !bytes.Equal(got, want) {
							t.Fatalf("level %d (shape %v): engine output differs from the reference", l, lv.Grid.Shape)
						}
					}
				})
			}
		}
	}
}

func TestConstantInputStaysConstantAtEveryLevel(t *testing.T) {
	pc := pyramidShapes[6] // the z-stack: every dim halves, ragged
	for _, method := range []string{"mean", "min", "max", "decimate"} {
		for _, dt := range allDTypes {
			name := fmt.Sprintf("const_%s_%s", method, dt)
			t.Run(name, func(t *testing.T) {
				a := pyramidAcquisition(name, dt, pc, method)
				size := zarr.DType(dt).Size()
				a.raw = make([]byte, elems(pc.dims)*int64(size))
				one := make([]byte, size)
				for k := range one {
					one[k] = 0xA5 - byte(k) // not fill, and a negative value for signed types
				}
				if dt == "float32" {
					binary.LittleEndian.PutUint32(one, math.Float32bits(-3.25))
				} else if dt == "float64" {
					binary.LittleEndian.PutUint64(one, math.Float64bits(1e300))
				}
				for i := 0; i < len(a.raw); i += size {
					copy(a.raw[i:], one)
				}
				ds := convertAndOpen(t, a)
				for l, lv := range ds.Levels {
					got, err := lv.ReadAll(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, bytes.Repeat(one, len(got)/size)) {
						t.Fatalf("level %d is not constant", l)
					}
				}
			})
		}
	}
}

func TestPyramidMetadataIsValidOMEAndEveryLevelOpensInZarrita(t *testing.T) {
	var cases []interopCase
	for i, pc := range pyramidShapes {
		a := pyramidAcquisition("ome_"+pc.name, "uint16", pc, "mean")
		for d, dm := range dims(a) {
			dm["scale"] = 0.5 + float64(d)
			dm["unit"] = "micrometer"
		}
		a.randomRaw(uint64(i), elems(pc.dims))
		spool, dest := t.TempDir(), t.TempDir()
		mp := a.write(t, spool)
		_, stderr, err := zspool(t, "convert", mp, "--dest", dest, "--quiet")
		if err != nil {
			t.Fatalf("convert: %v\n%s", err, stderr)
		}
		root := filepath.Join(dest, a.name+".ome.zarr")
		group := readJSON(t, filepath.Join(root, "zarr.json"))
		omeAttr, isOME := group["attributes"].(map[string]any)["ome"]
		// OME-NGFF 0.5 holds 2–5 axes with 2–3 space axes last: one_d and
		// four_d_channels (two custom axes) cannot be OME images, so they
		// are plain Zarr v3 groups, with a warning, never invalid OME.
		wantOME := pc.name != "one_d" && pc.name != "four_d_channels"
		if isOME != wantOME {
			t.Fatalf("%s: OME metadata %v, want %v", pc.name, isOME, wantOME)
		}
		if !isOME {
			if !strings.Contains(stderr, "cannot be an OME-NGFF image: writing a plain Zarr v3 group") {
				t.Errorf("%s: no warning that the group is plain:\n%s", pc.name, stderr)
			}
			for l := range pyramidLevels(t, root) {
				c := interopCase{Dataset: root, Level: l}
				if l == 0 {
					c.Raw = filepath.Join(spool, a.name+".raw")
				}
				cases = append(cases, c)
			}
			continue
		}
		ms := omeAttr.(map[string]any)["multiscales"].([]any)[0].(map[string]any)
		if ms["type"] != "mean" {
			t.Errorf("%s: multiscale type %v", pc.name, ms["type"])
		}
		sets := ms["datasets"].([]any)
		for l, s := range sets {
			ds := s.(map[string]any)
			if ds["path"] != fmt.Sprint(l) {
				t.Errorf("%s: dataset %d has path %v", pc.name, l, ds["path"])
			}
			ts := ds["coordinateTransformations"].([]any)
			scale := ts[0].(map[string]any)["scale"].([]any)
			arr := readJSON(t, filepath.Join(root, fmt.Sprint(l), "zarr.json"))
			arr0 := readJSON(t, filepath.Join(root, "0", "zarr.json"))
			var shift []any
			if len(ts) > 1 {
				shift = ts[1].(map[string]any)["translation"].([]any)
			}
			if (l > 0) != (shift != nil) {
				t.Errorf("%s level %d: translation %v; want one on every level but 0 (mean moves pixel centres)", pc.name, l, shift)
			}
			for d := range pc.dims {
				base := 0.5 + float64(d)
				want, wantShift := base, 0.0
				if pc.space[d] {
					// The scale from the actual size ratio (ceil-halving
					// makes it less than 2^l), the centre of a 2^l box.
					want = base * arr0["shape"].([]any)[d].(float64) / arr["shape"].([]any)[d].(float64)
					wantShift = base * (float64(int(1)<<l) - 1) / 2
				}
				if math.Abs(scale[d].(float64)-want) > 1e-12*want {
					t.Errorf("%s level %d dim %d: scale %v, want %v", pc.name, l, d, scale[d], want)
				}
				if shift != nil && math.Abs(shift[d].(float64)-wantShift) > 1e-12 {
					t.Errorf("%s level %d dim %d: translation %v, want %v", pc.name, l, d, shift[d], wantShift)
				}
			}
			if fmt.Sprint(arr["dimension_names"]) != fmt.Sprint([]string{"a", "b", "c", "d"}[:len(pc.dims)]) {
				t.Errorf("%s level %d: dimension_names %v", pc.name, l, arr["dimension_names"])
			}
			c := interopCase{Dataset: root, Level: l}
			if l == 0 {
				c.Raw = filepath.Join(spool, a.name+".raw")
			}
			cases = append(cases, c)
		}
	}
	checkWithZarrita(t, cases)
}

// pyramidLevels counts the arrays 0, 1, … of a plain group.
func pyramidLevels(t *testing.T, root string) int {
	t.Helper()
	n := 0
	for {
		if _, err := os.Stat(filepath.Join(root, fmt.Sprint(n), "zarr.json")); err != nil {
			return n
		}
		n++
	}
}
