package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

var allDTypes = []string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64"}

// issueShapes are the CPU-pipeline issue's shapes: dims slowest → fastest,
// chunk, and shard in chunks.
var issueShapes = []struct {
	name string
	dims []dimSpec
}{
	{"ragged_everywhere", []dimSpec{{5, 2, 2}, {7, 3, 2}, {9, 4, 2}}},
	{"inner_not_multiple", []dimSpec{{3, 1, 1}, {10, 4, 2}, {8, 8, 1}}},
	{"grid_not_multiple_of_shard", []dimSpec{{4, 1, 1}, {9, 3, 2}, {9, 3, 2}}},
	{"four_d_channels", []dimSpec{{64, 16, 2}, {3, 1, 3}, {256, 64, 2}, {256, 64, 2}}},
	{"one_element", []dimSpec{{1, 1, 1}, {1, 1, 1}, {1, 1, 1}}},
	{"one_d", []dimSpec{{1000003, 4096, 16}}},
}

func elems(dims []dimSpec) int64 {
	n := int64(1)
	for _, d := range dims {
		n *= d.size
	}
	return n
}

func TestEveryShapeAndDTypeConvertsVerifiesAndReadsBackInZarrita(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the full shape × dtype matrix writes ~1 GB")
	}
	spool, dest := t.TempDir(), t.TempDir()
	var cases []interopCase
	seed := uint64(1)
	for _, sh := range issueShapes {
		for _, dt := range allDTypes {
			name := sh.name + "_" + dt
			a := newAcquisition(name, dt, sh.dims)
			if dt == "uint16" || dt == "float64" {
				a.manifest["byte_order"] = "big"
			}
			seed++
			a.randomRaw(seed, elems(sh.dims))
			mp := a.write(t, spool)
			t.Run(name, func(t *testing.T) {
				if _, stderr, err := zspool(t, "convert", mp, "--dest", dest, "--quiet"); err != nil {
					t.Fatalf("convert: %v\n%s", err, stderr)
				}
				ds := filepath.Join(dest, name+".ome.zarr")
				out, stderr, err := zspool(t, "verify", ds, "--raw", filepath.Join(spool, name+".raw"), "--quiet")
				if err != nil || !strings.Contains(out, "equals the raw file") {
					t.Fatalf("verify: %v\n%s%s", err, out, stderr)
				}
			})
			cases = append(cases, interopCase{Dataset: filepath.Join(dest, name+".ome.zarr"), Raw: filepath.Join(spool, name+".raw")})
		}
	}
	checkWithZarrita(t, cases)
}

func TestDimZeroSizeIsInferredFromTheFileSize(t *testing.T) {
	spool, dest := t.TempDir(), t.TempDir()
	a := newAcquisition("inferred", "uint16", []dimSpec{{0, 3, 2}, {10, 4, 2}, {6, 6, 1}})
	a.randomRaw(7, 11*10*6) // 11 frames: 4 epochs, the last one short
	mp := a.write(t, spool)
	if _, stderr, err := zspool(t, "convert", mp, "--dest", dest, "--quiet"); err != nil {
		t.Fatalf("convert: %v\n%s", err, stderr)
	}
	ds := filepath.Join(dest, "inferred.ome.zarr")
	out, stderr, err := zspool(t, "verify", ds, "--raw", filepath.Join(spool, "inferred.raw"), "--quiet")
	if err != nil {
		t.Fatalf("verify: %v\n%s%s", err, out, stderr)
	}
	doc := readJSON(t, filepath.Join(ds, "0", "zarr.json"))
	if got := fmt.Sprint(doc["shape"]); got != "[11 10 6]" {
		t.Errorf("level 0 shape = %s, want [11 10 6]", got)
	}
	checkWithZarrita(t, []interopCase{{Dataset: ds, Raw: filepath.Join(spool, "inferred.raw")}})
}
