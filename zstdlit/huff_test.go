package zstdlit

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/zspool/zspool/zstdlit/corpus"
)

// treeLengths is package-merge as textbooks write it, with a tree of
// packages walked down to the leaves: the reference that packageMerge's
// prefix bookkeeping must match length for length, since the GPU's
// huffman_lengths and both CPU encoders' bytes depend on the lengths.
func treeLengths(hist *[256]uint32, maxBits int) [256]uint8 {
	type node struct {
		w    uint64
		sym  int
		a, b int
	}
	var nodes []node
	var leaves []int
	for s, c := range hist {
		if c != 0 {
			nodes = append(nodes, node{w: uint64(c), sym: s, a: -1, b: -1})
			leaves = append(leaves, len(nodes)-1)
		}
	}
	sort.SliceStable(leaves, func(i, j int) bool { return nodes[leaves[i]].w < nodes[leaves[j]].w })
	cur := append([]int(nil), leaves...)
	for level := 1; level < maxBits; level++ {
		var pkgs []int
		for i := 0; i+1 < len(cur); i += 2 {
			nodes = append(nodes, node{w: nodes[cur[i]].w + nodes[cur[i+1]].w, sym: -1, a: cur[i], b: cur[i+1]})
			pkgs = append(pkgs, len(nodes)-1)
		}
		var next []int
		i, j := 0, 0
		for i < len(leaves) || j < len(pkgs) {
			if j == len(pkgs) || (i < len(leaves) && nodes[leaves[i]].w <= nodes[pkgs[j]].w) {
				next = append(next, leaves[i])
				i++
			} else {
				next = append(next, pkgs[j])
				j++
			}
		}
		cur = next
	}
	var nb [256]uint8
	var count func(id int)
	count = func(id int) {
		if nodes[id].sym >= 0 {
			nb[nodes[id].sym]++
			return
		}
		count(nodes[id].a)
		count(nodes[id].b)
	}
	for _, id := range cur[:2*len(leaves)-2] {
		count(id)
	}
	return nb
}

func TestPackageMergeGivesTheTreeWalksLengths(t *testing.T) {
	type histCase struct {
		name    string
		hist    [256]uint32
		maxBits int
	}
	var cases []histCase
	for _, tc := range corpus.Cases() {
		for off := 0; off < len(tc.Data); off += MaxBlockSize {
			var h [256]uint32
			for _, b := range tc.Data[off:min(off+MaxBlockSize, len(tc.Data))] {
				h[b]++
			}
			cases = append(cases, histCase{fmt.Sprintf("%s@%d", tc.Name, off), h, MaxHuffBits})
		}
	}
	r := rand.New(rand.NewPCG(18, 1))
	for i := range 300 {
		var h [256]uint32
		n := 2 + r.IntN(255)
		for s := range n {
			switch i % 4 {
			case 0: // geometric: deep trees that the limit cuts
				h[s] = 1 + uint32(float64(1<<17)*pow(0.7, s))
			case 1: // many equal counts: the tie rules decide
				h[r.IntN(256)] = 1 + uint32(r.IntN(3))
			case 2:
				h[s] = 1 + uint32(r.IntN(1<<17))
			default:
				h[r.IntN(256)] += 1 + uint32(r.IntN(50))
			}
		}
		cases = append(cases, histCase{fmt.Sprintf("random%d", i), h, []int{MaxHuffBits, 8, 9, 12, 20}[i%5]})
	}
	var fib [256]uint32
	for _, b := range corpus.Fibonacci(25) {
		fib[b]++
	}
	cases = append(cases, histCase{"fibonacci unlimited", fib, 30}, histCase{"fibonacci limited", fib, MaxHuffBits})
	var pm packageMerge
	checked := 0
	for _, tc := range cases {
		distinct := 0
		for _, c := range tc.hist {
			if c != 0 {
				distinct++
			}
		}
		if distinct < 2 || distinct > 1<<tc.maxBits {
			continue
		}
		checked++
		var got [256]uint8
		pm.lengths(&tc.hist, tc.maxBits, &got)
		if want := treeLengths(&tc.hist, tc.maxBits); got != want {
			t.Fatalf("%s, limit %d: lengths\n%v\nwant\n%v", tc.name, tc.maxBits, got, want)
		}
	}
	if checked < 300 {
		t.Fatalf("only %d histograms checked", checked)
	}
}

func pow(x float64, n int) float64 {
	p := 1.0
	for range n {
		p *= x
	}
	return p
}

func TestHistogramCountsEveryByteOnBothSidesOfItsSmallInputCutoff(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	data := make([]byte, 3*4096+13)
	for i := range data {
		data[i] = byte(rng.IntN(7)) // few values: repeats on every table
		if i%2 == 1 {
			data[i] = byte(rng.Uint32())
		}
	}
	var h [histTables][256]uint32
	for _, n := range []int{0, 1, 7, 4095, 4096, 4096 + 7, len(data)} {
		var want [256]uint32
		for _, c := range data[:n] {
			want[c]++
		}
		if got := histogram(&h, data[:n]); *got != want {
			t.Errorf("%d bytes: counts differ from a plain count", n)
		}
	}
}
