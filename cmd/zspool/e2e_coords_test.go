package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// The coordinate-encoding test writes uint64 elements whose value says
// where the element must end up — 1 + (shard << 42 | slot << 21 | in-chunk
// position) — and then reads every shard object with its own index math,
// independent of the zarr package, checking every index entry, offset,
// frame header and decoded value.

func coordValue(shard, slot, pos int64) uint64 {
	return 1 + uint64(shard)<<42 | uint64(slot)<<21 | uint64(pos)
}

// ravel is the C-order linear index of x over extent.
func ravel(x, extent []int64) int64 {
	var v int64
	for d := range x {
		v = v*extent[d] + x[d]
	}
	return v
}

func unravel(v int64, extent []int64) []int64 {
	x := make([]int64, len(extent))
	for d := len(extent) - 1; d >= 0; d-- {
		x[d] = v % extent[d]
		v /= extent[d]
	}
	return x
}

func ceil(a, b int64) int64 { return (a + b - 1) / b }

func coordAcquisition(name string, dims []dimSpec) *acquisition {
	a := newAcquisition(name, "uint64", dims)
	r := len(dims)
	s, n, p, q := make([]int64, r), make([]int64, r), make([]int64, r), make([]int64, r)
	for d, dim := range dims {
		s[d], n[d], p[d] = dim.size, dim.chunk, dim.shard
		q[d] = ceil(ceil(s[d], n[d]), p[d])
	}
	a.raw = make([]byte, elems(dims)*8)
	x := make([]int64, r)
	g, w, rr := make([]int64, r), make([]int64, r), make([]int64, r)
	for i := int64(0); i < elems(dims); i++ {
		v := i
		for d := r - 1; d >= 0; d-- {
			x[d] = v % s[d]
			v /= s[d]
		}
		for d := range r {
			c := x[d] / n[d]
			g[d], w[d], rr[d] = c/p[d], c%p[d], x[d]%n[d]
		}
		binary.LittleEndian.PutUint64(a.raw[i*8:], coordValue(ravel(g, q), ravel(w, p), ravel(rr, n)))
	}
	return a
}

// frameContentSize parses a zstd frame header (RFC 8878 §3.1.1.1) and
// returns Frame_Content_Size, or ok=false when the header carries none.
func frameContentSize(f []byte) (uint64, bool, error) {
	if len(f) < 6 || binary.LittleEndian.Uint32(f) != 0xFD2FB528 {
		return 0, false, fmt.Errorf("not a zstd frame")
	}
	fhd := f[4]
	fcsFlag, single, dictFlag := fhd>>6, fhd>>5&1 == 1, fhd&3
	pos := 5
	if !single {
		pos++ // window descriptor
	}
	pos += []int{0, 1, 2, 4}[dictFlag]
	size := []int{0, 2, 4, 8}[fcsFlag]
	if fcsFlag == 0 && single {
		size = 1
	}
	if size == 0 {
		return 0, false, nil
	}
	if len(f) < pos+size {
		return 0, false, fmt.Errorf("frame header cut short")
	}
	var v uint64
	for i := size - 1; i >= 0; i-- {
		v = v<<8 | uint64(f[pos+i])
	}
	if size == 2 {
		v += 256
	}
	return v, true, nil
}

func TestEveryShardIndexOffsetAndValueLandsWhereItsCoordinatesSay(t *testing.T) {
	shapes := issueShapes
	if testing.Short() {
		shapes = shapes[:3]
	}
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			spool, dest := t.TempDir(), t.TempDir()
			a := coordAcquisition(sh.name, sh.dims)
			mp := a.write(t, spool)
			if _, stderr, err := zspool(t, "convert", mp, "--dest", dest, "--quiet"); err != nil {
				t.Fatalf("convert: %v\n%s", err, stderr)
			}
			r := len(sh.dims)
			s, n, p, q := make([]int64, r), make([]int64, r), make([]int64, r), make([]int64, r)
			for d, dim := range sh.dims {
				s[d], n[d], p[d] = dim.size, dim.chunk, dim.shard
				q[d] = ceil(ceil(s[d], n[d]), p[d])
			}
			slots := int64(1)
			chunkElems := int64(1)
			for d := range r {
				slots *= p[d]
				chunkElems *= n[d]
			}
			shards := int64(1)
			for d := range r {
				shards *= q[d]
			}
			frames, present := 0, 0
			for gi := int64(0); gi < shards; gi++ {
				g := unravel(gi, q)
				key := "c"
				for _, v := range g {
					key += fmt.Sprintf("/%d", v)
				}
				obj, err := os.ReadFile(filepath.Join(dest, sh.name+".ome.zarr", "0", filepath.FromSlash(key)))
				if err != nil {
					t.Fatalf("shard %s: %v", key, err)
				}
				isz := slots*16 + 4
				index := obj[int64(len(obj))-isz:]
				if got, want := binary.LittleEndian.Uint32(index[slots*16:]), crc32.Checksum(index[:slots*16], castagnoli); got != want {
					t.Fatalf("shard %s: index crc32c %08x, want %08x", key, got, want)
				}
				type span struct{ off, n uint64 }
				var spans []span
				for slot := int64(0); slot < slots; slot++ {
					off := binary.LittleEndian.Uint64(index[slot*16:])
					nb := binary.LittleEndian.Uint64(index[slot*16+8:])
					w := unravel(slot, p)
					c := make([]int64, r)
					inside := true
					for d := range r {
						c[d] = g[d]*p[d] + w[d]
						inside = inside && c[d]*n[d] < s[d]
					}
					if !inside {
						if off != ^uint64(0) || nb != ^uint64(0) {
							t.Fatalf("shard %s slot %d (chunk %v) is outside the array but has (%d, %d)", key, slot, c, off, nb)
						}
						continue
					}
					if off == ^uint64(0) {
						t.Fatalf("shard %s slot %d (chunk %v): absent, but it holds data", key, slot, c)
					}
					spans = append(spans, span{off, nb})
					frame := obj[off : off+nb]
					fcs, ok, err := frameContentSize(frame)
					if err != nil || !ok || fcs != uint64(chunkElems*8) {
						t.Fatalf("shard %s slot %d: Frame_Content_Size %d present=%v err=%v, want %d", key, slot, fcs, ok, err, chunkElems*8)
					}
					frames++
					raw, err := dec.DecodeAll(frame, nil)
					if err != nil || int64(len(raw)) != chunkElems*8 {
						t.Fatalf("shard %s slot %d: decoded %d bytes (%v), want %d", key, slot, len(raw), err, chunkElems*8)
					}
					for pos := int64(0); pos < chunkElems; pos++ {
						rr := unravel(pos, n)
						in := true
						for d := range r {
							in = in && c[d]*n[d]+rr[d] < s[d]
						}
						want := uint64(0)
						if in {
							want = coordValue(gi, slot, pos)
						}
						if got := binary.LittleEndian.Uint64(raw[pos*8:]); got != want {
							t.Fatalf("shard %s slot %d position %v: value %#x, want %#x", key, slot, rr, got, want)
						}
					}
					present++
				}
				// Chunks are packed front to back with no gap or overlap,
				// and the index follows the last one.
				sort.Slice(spans, func(i, j int) bool { return spans[i].off < spans[j].off })
				next := uint64(0)
				for _, sp := range spans {
					if sp.off != next {
						t.Fatalf("shard %s: chunk at %d, want %d (gap or overlap)", key, sp.off, next)
					}
					next += sp.n
				}
				if next != uint64(int64(len(obj))-isz) {
					t.Fatalf("shard %s: chunks end at %d, index starts at %d", key, next, int64(len(obj))-isz)
				}
			}
			if present == 0 || frames != present {
				t.Fatalf("checked %d frames for %d present chunks", frames, present)
			}
		})
	}
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}
