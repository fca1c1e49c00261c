package zstdlit

import "math/bits"

// FSE compression of Huffman weights (RFC 8878 §4.1 and §4.2.1.2).

const maxWeight = 12 // weights are 0..11 (+1 spare)

// fseCompressWeights FSE-codes ws (weights of symbols 0..maxSym-1) with two
// interleaved states, trying accuracy logs 5 and 6 and keeping the shorter
// (5 on a tie). It reports false when FSE cannot code them: fewer than two
// weights, or a single distinct weight value.
func fseCompressWeights(ws []byte) ([]byte, bool) {
	if len(ws) < 2 {
		return nil, false
	}
	var count [maxWeight]uint32
	maxW := 0
	for _, w := range ws {
		count[w]++
		maxW = max(maxW, int(w))
	}
	distinct := 0
	for _, c := range count {
		if c != 0 {
			distinct++
		}
	}
	if distinct < 2 {
		return nil, false
	}
	var best []byte
	for _, log := range []int{5, 6} {
		out := fseEncodeWith(ws, &count, maxW, log)
		if best == nil || len(out) < len(best) {
			best = out
		}
	}
	return best, true
}

// normalize spreads 1<<log over the present symbols: one each, then the rest
// in proportion to the counts by largest remainder (ties to the smaller
// symbol).
// norm must hold maxSym+1 entries; at most maxFSESymbols symbols.
func normalize(count []uint32, maxSym, log int, norm []int) {
	clear(norm[:maxSym+1])
	total, present := uint64(0), 0
	for s := 0; s <= maxSym; s++ {
		if count[s] != 0 {
			norm[s] = 1
			present++
			total += uint64(count[s])
		}
	}
	rest := uint64(1<<log - present)
	var rem [maxFSESymbols]uint64
	given := uint64(0)
	for s := 0; s <= maxSym; s++ {
		if count[s] != 0 {
			q := uint64(count[s]) * rest
			norm[s] += int(q / total)
			given += q / total
			rem[s] = q % total
		}
	}
	for ; given < rest; given++ {
		b := -1
		for s := 0; s <= maxSym; s++ {
			if count[s] != 0 && (b < 0 || rem[s] > rem[b]) {
				b = s
			}
		}
		norm[b]++
		rem[b] = 0
	}
}

// maxFSESymbols is the largest alphabet FSE codes here (match-length codes).
const maxFSESymbols = 53

// appendNCount writes the FSE table description (RFC 8878 §4.1.1) of norm
// (all counts ≥ 0, no "less than 1" probabilities).
func appendNCount(dst []byte, norm []int, maxSym, log int) []byte {
	var acc uint64
	var nb uint
	put := func(v uint64, n uint) {
		acc |= v << nb
		nb += n
		for nb >= 8 {
			dst = append(dst, byte(acc))
			acc >>= 8
			nb -= 8
		}
	}
	put(uint64(log-5), 4)
	remaining := 1<<log + 1
	threshold := 1 << log
	nbBits := uint(log + 1)
	prev0 := false
	for s := 0; s <= maxSym && remaining > 1; {
		if prev0 {
			start := s
			for s <= maxSym && norm[s] == 0 {
				s++
			}
			for s >= start+3 {
				put(3, 2)
				start += 3
			}
			put(uint64(s-start), 2)
		}
		c := norm[s]
		s++
		mx := 2*threshold - 1 - remaining
		remaining -= c
		v := c + 1
		if v >= threshold {
			v += mx
		}
		if v < mx {
			put(uint64(v), nbBits-1)
		} else {
			put(uint64(v), nbBits)
		}
		prev0 = v == 1
		for remaining < threshold {
			nbBits--
			threshold >>= 1
		}
	}
	if nb > 0 {
		dst = append(dst, byte(acc))
	}
	return dst
}

type fseSym struct {
	deltaNbBits    uint32
	deltaFindState int32
}

// fseEncodeWith writes the table description then the two-state bitstream.
func fseEncodeWith(ws []byte, count *[maxWeight]uint32, maxSym, log int) []byte {
	var norm [maxWeight]int
	normalize(count[:], maxSym, log, norm[:])
	out := appendNCount(nil, norm[:], maxSym, log)

	size := 1 << log
	// Spread symbols over the states as the decoder does.
	spread := make([]byte, size)
	pos, step, mask := 0, size>>1+size>>3+3, size-1
	for s := 0; s <= maxSym; s++ {
		for i := 0; i < norm[s]; i++ {
			spread[pos] = byte(s)
			pos = (pos + step) & mask
		}
	}
	// States sorted by symbol, then by position.
	var cumul [maxWeight + 1]int
	for s := 0; s <= maxSym; s++ {
		cumul[s+1] = cumul[s] + norm[s]
	}
	stateTable := make([]uint32, size)
	next := cumul
	for u := 0; u < size; u++ {
		s := spread[u]
		stateTable[next[s]] = uint32(size + u)
		next[s]++
	}
	var tt [maxWeight]fseSym
	for s := 0; s <= maxSym; s++ {
		n := norm[s]
		if n == 0 {
			continue
		}
		maxBitsOut := uint32(log)
		if n > 1 {
			maxBitsOut = uint32(log) - uint32(highBit(uint32(n-1)))
		}
		minStatePlus := uint32(n) << maxBitsOut
		tt[s] = fseSym{deltaNbBits: maxBitsOut<<16 - minStatePlus, deltaFindState: int32(cumul[s] - n)}
	}
	initState := func(s byte) uint32 {
		t := tt[s]
		nbOut := (t.deltaNbBits + 1<<15) >> 16
		v := nbOut<<16 - t.deltaNbBits
		return stateTable[int32(v>>nbOut)+t.deltaFindState]
	}
	w := bitWriter{out: out}
	var st [2]uint32
	n := len(ws)
	st[(n-1)&1] = initState(ws[n-1])
	st[(n-2)&1] = initState(ws[n-2])
	for i := n - 3; i >= 0; i-- {
		t := tt[ws[i]]
		s := &st[i&1]
		nbOut := (*s + t.deltaNbBits) >> 16
		w.add(uint64(*s), uint(nbOut))
		*s = stateTable[int32(*s>>nbOut)+t.deltaFindState]
	}
	w.add(uint64(st[1]), uint(log))
	w.add(uint64(st[0]), uint(log))
	return w.close()
}

// highBit is the index of v's top set bit, -1 for 0.
func highBit(v uint32) int { return bits.Len32(v) - 1 }
