package zstdlit

import "math"

// The windowed encoder's options (window.go): what each field asks of the
// parse, the ladder that picks them by level and element size, and the
// dense rung that a low-entropy frame takes in their place.

// WindowOptions configures EncodeWindow. WindowOptionsFor gives the ladder
// of levels; a zero field takes its level-1 value for 16-bit data.
type WindowOptions struct {
	// Checksum appends the low 4 bytes of the XXH64 of the content.
	Checksum bool
	// MinMatch is the shortest match and the bytes hashed, 4…8 (0: 6).
	MinMatch int
	// HashLog sizes the table of latest positions, 10…20 (0: 16).
	HashLog int
	// SearchStrength: the step grows by one every 2^SearchStrength
	// literals since the last match (0: 4). Larger searches harder.
	SearchStrength int
	// Accelerate, when set (1…30), grows the step by one more every
	// 2^Accelerate literals: with SearchStrength 4, Accelerate 7 grows
	// it by 9 every 128 literals, a search between strengths 4 and 3.
	// A dense rung keeps the frame's Accelerate.
	Accelerate int
	// Stride is the step right after a match (0: 2).
	Stride int
	// LongHashLog, when set, sizes a second table, of 8-byte hashes,
	// asked first: the latest position of the same 8 bytes is often
	// further back than the latest of the same MinMatch bytes, and a
	// longer match.
	LongHashLog int
	// Fill enters every other position inside each match, from its third
	// byte on, into the tables too, where the parse enters only the
	// positions it stops at and the one two bytes before a match's end.
	// It costs a few instructions a match and pays where the background
	// repeats within a few pixels: dim frames.
	Fill bool
	// Dense, when its Entropy is set, is the rung of a frame whose first
	// block has under Entropy bits of order-0 entropy a byte: such frames
	// are mostly matches, or mostly runs, and pay for another search.
	Dense DenseRung
}

// DenseRung replaces the fields of a WindowOptions that it sets (nonzero)
// in a frame whose first block has under Entropy bits of order-0 entropy
// a byte.
type DenseRung struct {
	Entropy        float64
	MinMatch       int
	SearchStrength int
	Fill           bool
}

// The entropy under which the ladder's dense rungs apply, in bits a byte:
// dim 12-bit frames have 2.7, bright ones 4.6, flat fields 4.9; 8-bit
// frames of cells on a dark field 2.4 to 5.0 (most under 4.2), those whose
// cells saturate 3.2 to 5.9 (most above).
const (
	DenseEntropy  = 3.5
	DenseEntropy8 = 4.2
)

// WindowOptionsFor is the windowed encoder's ladder: compression level
// (zstd's numbering) and element size in, options out. Measured on the
// camera corpus against libzstd, one 2 MiB chunk a frame (README,
// "zstd encoders"):
//
//   - Levels 1 and 2, 16-bit: 6-byte matches, searched on even bytes, the
//     step growing by 9 every 128 literals (SearchStrength 4, Accelerate
//     7); a 64 Ki-entry table. The growth trades ratio for speed on
//     bright cells, whose parse is mostly the positions between short
//     matches: every 16 literals kept 100.9% of libzstd's ratio, 9 every
//     128 keeps 100.3% for 8 to 10% more speed a core (5 to 6% on the
//     16-core convert), 5 every 64 99.6% and every 8 96.5%; dim frames
//     and flat fields do not move (108.7%, 100.1%). 6-byte matches
//     keep the noise's chance 5-byte repeats, whose sequences cost more
//     than they save, out of the parse. Dense frames (dim ones: under
//     DenseEntropy bits a byte, and 99% matches) take 7-byte matches:
//     as many bytes in matches, fewer sequences, each paying more
//     (dim: 3.66 against 3.56 with 6, and 14% faster), and Fill: a
//     dim background repeats within a few pixels, and a table that saw
//     only the positions the parse stopped at forgot most of it (dim:
//     3.864 against 3.659, 108.7% of libzstd against 103.0%, 4% slower;
//     bright cells would gain 0.6% for 3%, so they do not take it).
//   - Levels 1 and 2, 8-bit: 8-byte matches on every other byte, from a
//     2^16-entry table, the step's growth chosen by the first block's
//     entropy. Under DenseEntropy8 (cells on a dark field: the background
//     a value or two) every 8 literals: searching less there stores less,
//     as the background's chance matches cost more than their literals.
//     Above it (cells clipped at 255 on a busier background) every 256
//     literals, as libzstd's search is that dense. Against libzstd level
//     1 (one core of an H100 host, side by side): dark field 101.5% at
//     376-393 MB/s (libzstd 230), saturated cells 100.0-100.2% at
//     327-340 (libzstd 530); the one rung before (8-byte matches on every
//     byte from 2^13 entries, the step growing every 16) kept 100.3% and
//     97.4%, and the first two-rung ladder (a7b9550: 7-byte matches on
//     every byte from 2^13 entries for saturated frames) 101.6% at 341
//     and 99.7% at 296-305.
//   - Level 3 and up (and 0, zstd's default level, 3): libzstd level 3's
//     two tables, a 2^17- or 2^18-entry one of 8-byte hashes asked first
//     and a 2^19-entry one of short matches. The short matches are 4
//     bytes on 16-bit data, searched as at level 1: a flat field or
//     bright cells repeat pixel pairs that only a table of half a million
//     entries remembers (flat: 100.3% of libzstd level 3's ratio, against
//     94.5% with 5-byte matches and a 2^17 table), and the long table
//     keeps dim frames at 99.2% without the dense rule. On 8-bit data 6
//     bytes, on every byte, the step growing every 64 literals (99.2%;
//     98.5% every 32). Both fill the tables (Fill): dim frames 99.2 ->
//     105.3% of libzstd level 3, 8-bit ones 99.2 -> 102.0%, bright
//     cells 102.6 -> 103.3%, for 5 to 13% of the speed. Levels above 3
//     take this rung too.
func WindowOptionsFor(level, elemSize int) WindowOptions {
	if level == 0 {
		level = 3 // zstd's "default level"
	}
	switch {
	case level >= 3 && elemSize == 1:
		return WindowOptions{MinMatch: 6, HashLog: 19, SearchStrength: 6, Stride: 1, LongHashLog: 18, Fill: true}
	case level >= 3:
		return WindowOptions{MinMatch: 4, HashLog: 19, SearchStrength: 4, Stride: 2, LongHashLog: 17, Fill: true}
	case elemSize == 1:
		return WindowOptions{MinMatch: 8, HashLog: 16, SearchStrength: 8, Stride: 2,
			Dense: DenseRung{Entropy: DenseEntropy8, SearchStrength: 3}}
	}
	return WindowOptions{MinMatch: 6, HashLog: 16, SearchStrength: 4, Accelerate: 7, Stride: 2,
		Dense: DenseRung{Entropy: DenseEntropy, MinMatch: 7, Fill: true}}
}

func (o WindowOptions) withDefaults() WindowOptions {
	def := WindowOptionsFor(1, 2)
	if o.MinMatch == 0 {
		o.MinMatch = def.MinMatch
	}
	if o.HashLog == 0 {
		o.HashLog = def.HashLog
	}
	if o.SearchStrength == 0 {
		o.SearchStrength = def.SearchStrength
	}
	if o.Stride == 0 {
		o.Stride = def.Stride
	}
	o.MinMatch = min(max(o.MinMatch, 4), 8)
	o.HashLog = min(max(o.HashLog, 10), 20)
	o.SearchStrength = min(max(o.SearchStrength, 1), 30)
	o.Accelerate = min(max(o.Accelerate, 0), 30)
	o.Stride = min(max(o.Stride, 1), 8)
	return o
}

// dense is o for the frame of src: its dense rung's fields in place of
// its own when src's first block is under the rung's entropy, within
// withDefaults' bounds.
func (o WindowOptions) dense(src []byte) WindowOptions {
	d := o.Dense
	if d.Entropy == 0 || len(src) == 0 || entropy(src[:min(len(src), MaxBlockSize)]) >= d.Entropy {
		return o
	}
	if d.MinMatch != 0 {
		o.MinMatch = d.MinMatch
	}
	if d.SearchStrength != 0 {
		o.SearchStrength = d.SearchStrength
	}
	o.Fill = o.Fill || d.Fill
	return o.withDefaults()
}

// entropy is the order-0 entropy of b in bits per byte.
func entropy(b []byte) float64 {
	var h [histTables][256]uint32
	hist := histogram(&h, b)
	n := float64(len(b))
	var e float64
	for _, c := range hist {
		if c != 0 {
			p := float64(c) / n
			e -= p * math.Log2(p)
		}
	}
	return e
}
