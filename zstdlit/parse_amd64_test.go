//go:build amd64 && !purego

package zstdlit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/zspool/zspool/internal/synth"
	"github.com/zspool/zspool/zstdlit/corpus"
)

func TestTheParseAssemblysOffsetsAreTheGoTypes(t *testing.T) {
	var a parseAsm
	got := []uintptr{
		unsafe.Offsetof(a.src), unsafe.Offsetof(a.tab), unsafe.Offsetof(a.lits), unsafe.Offsetof(a.seqs),
		unsafe.Offsetof(a.mul), unsafe.Offsetof(a.hl), unsafe.Offsetof(a.tagMask), unsafe.Offsetof(a.posMask),
		unsafe.Offsetof(a.mask), unsafe.Offsetof(a.mask8), unsafe.Offsetof(a.mm), unsafe.Offsetof(a.stride),
		unsafe.Offsetof(a.ss), unsafe.Offsetof(a.end), unsafe.Offsetof(a.limit), unsafe.Offsetof(a.maxOff),
		unsafe.Offsetof(a.ip), unsafe.Offsetof(a.anchor), unsafe.Offsetof(a.nl), unsafe.Offsetof(a.ns),
		unsafe.Offsetof(a.r0), unsafe.Offsetof(a.r1), unsafe.Offsetof(a.r2),
		unsafe.Sizeof(sequence{}), unsafe.Offsetof(sequence{}.matchLen), unsafe.Offsetof(sequence{}.offVal),
		unsafe.Sizeof(uint32(0)), unsafe.Offsetof(a.long), unsafe.Offsetof(a.hl2), unsafe.Offsetof(a.prime), unsafe.Offsetof(a.fill),
		unsafe.Offsetof(a.llc), unsafe.Offsetof(a.mlc), unsafe.Offsetof(a.ofc), unsafe.Offsetof(a.cnt),
		unsafe.Offsetof(seqCounts{}.ml), unsafe.Offsetof(seqCounts{}.of), unsafe.Offsetof(a.repEnd), unsafe.Offsetof(a.ss2),
	}
	want := []uintptr{0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160, 168, 176, 12, 4, 8, 4, 184, 192, 200, 208, 216, 224, 232, 240, 256, 512, 248, 256}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("offset %d is %d, the assembly (parse_amd64.s) takes %d", i, got[i], want[i])
		}
	}
}

// alternatingCopies is random bytes followed by back-to-back copies from
// two or three offsets in turn, each copy a few bytes long, with a random
// byte now and then: sequences without literals between them, whose
// offsets are the previous ones (repCode's cases after a match), and
// the last offset again after one literal.
func alternatingCopies(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	b := make([]byte, 0, n)
	for range 4096 {
		b = append(b, byte(r.Uint32()))
	}
	offs := []int{1000 + r.IntN(1000), 37 + r.IntN(50), 2500 + r.IntN(500)}
	for len(b) < n {
		switch r.IntN(10) {
		case 0:
			b = append(b, byte(r.Uint32()))
		case 1: // one less than an offset, right after a match
			if offs[0] > 40 {
				offs[0]--
			}
			fallthrough
		default:
			o := offs[r.IntN(len(offs))]
			for range 6 + r.IntN(20) {
				b = append(b, b[len(b)-o])
			}
		}
	}
	return b[:n]
}

func TestTheParseAssemblyParsesAsGoDoes(t *testing.T) {
	if !hasBMI2 {
		t.Skip("this core lacks BMI2: parse runs its Go reference, which it would be compared with")
	}
	type input struct {
		name string
		data []byte
		elem int
	}
	var ins []input
	for _, cam := range synth.Cameras(256, 256) {
		ins = append(ins, input{cam.Name, cam.ZarrChunks()[0], cam.ElemSize()})
	}
	for _, c := range corpus.Cases() {
		ins = append(ins, input{c.Name, c.Data, 2})
	}
	for i := range 3 {
		ins = append(ins, input{fmt.Sprintf("alternating copies %d", i), alternatingCopies(300000+i*50000, uint64(i)), 1})
	}
	r := rand.New(rand.NewPCG(5, 9))
	// A frame that opens with zeros, whose hash's tag is 0 as an empty
	// entry's is, behind a zero byte of the same array: a candidate
	// before the frame's first byte must be turned down.
	zeros := make([]byte, 1+200000)
	for i := 65; i < len(zeros); i++ {
		zeros[i] = byte(r.Uint32())
	}
	ins = append(ins, input{"zeros first", zeros[1:], 2})
	// The repeat-offset cases reached, as (literals before != 0, offVal).
	reached := map[[2]uint32]bool{}
	for _, in := range ins {
		if len(in.data) < 16 {
			continue
		}
		opts := []WindowOptions{WindowOptionsFor(1, in.elem).dense(in.data).withDefaults(),
			WindowOptionsFor(3, in.elem).withDefaults()}
		for i := range 4 {
			o := WindowOptions{MinMatch: 4 + r.IntN(5), HashLog: 10 + r.IntN(8),
				SearchStrength: 1 + r.IntN(8), Stride: 1 + r.IntN(3), Fill: r.IntN(2) == 0}
			if i%2 == 1 {
				o.LongHashLog = 10 + r.IntN(8)
			}
			if i >= 2 { // the step's second growth term, as level 1's 16-bit rung has
				o.Accelerate = o.SearchStrength + 1 + r.IntN(4)
			}
			opts = append(opts, o.withDefaults())
		}
		for oi, opt := range opts {
			// a window of the whole frame, and one small enough to turn
			// candidates down
			for _, maxOff := range []int{len(in.data), 1 + r.IntN(3000)} {
				goE, asmE, opt := parsers(in.data, opt)
				for start := 0; start < len(in.data); start += MaxBlockSize {
					end := min(start+MaxBlockSize, len(in.data))
					goE.parseWindow(in.data, start, end, maxOff, opt)
					cnt := asmE.parse(in.data, start, end, maxOff, opt)
					where := fmt.Sprintf("%s, options %d %+v, window %d, block at %d", in.name, oi, opt, maxOff, start)
					if !slices.Equal(goE.wlits, asmE.wlits) {
						t.Fatalf("%s: the literals differ (%d against Go's %d bytes)", where, len(asmE.wlits), len(goE.wlits))
					}
					if i := firstDiff(goE.wseqs, asmE.wseqs); i >= 0 {
						t.Fatalf("%s: sequence %d of %d is %+v, Go's %+v", where, i, len(goE.wseqs), at(asmE.wseqs, i), at(goE.wseqs, i))
					}
					if goE.rep != asmE.rep || !slices.Equal(goE.table, asmE.table) || !slices.Equal(goE.long, asmE.long) {
						t.Fatalf("%s: repeat offsets %v against Go's %v, or the tables differ", where, asmE.rep, goE.rep)
					}
					if err := codedAsTheSectionCodes(asmE.wseqs, &asmE.sw, cnt); err != nil {
						t.Fatalf("%s: %v", where, err)
					}
					for _, q := range goE.wseqs {
						if q.offVal <= 3 {
							reached[[2]uint32{min(q.litLen, 1), q.offVal}] = true
						}
					}
				}
			}
		}
	}
	for _, want := range [][2]uint32{{1, 1}, {1, 2}, {1, 3}, {0, 1}, {0, 2}, {0, 3}} {
		if !reached[want] {
			t.Errorf("no input reached the repeat code %d with literals %v before it", want[1], want[0] != 0)
		}
	}
}

// parsers is two encoders readied alike for a frame of src, one for the
// Go parse and one for the assembly, and the options they take for it.
func parsers(src []byte, opt WindowOptions) (*windowEncoder, *windowEncoder, WindowOptions) {
	var es [2]*windowEncoder
	for i := range es {
		es[i] = new(windowEncoder)
		opt, _ = es[i].start(src, opt)
	}
	return es[0], es[1], opt
}

func firstDiff[T comparable](a, b []T) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

func at(s []sequence, i int) any {
	if i < len(s) {
		return s[i]
	}
	return "none"
}

// codedAsTheSectionCodes checks the codes the parse wrote to sw and
// counted in cnt against the sequences section's own (llCode, mlCode,
// highBit).
func codedAsTheSectionCodes(seqs []sequence, sw *seqWriter, cnt *seqCounts) error {
	var want seqCounts
	for i, q := range seqs {
		ll, ml, of := llCode(q.litLen), mlCode(q.matchLen), highBit(q.offVal)
		if int(sw.ll[i]) != ll || int(sw.ml[i]) != ml || int(sw.of[i]) != of {
			return fmt.Errorf("sequence %d %+v: codes %d %d %d, the section's %d %d %d", i, q, sw.ll[i], sw.ml[i], sw.of[i], ll, ml, of)
		}
		want.ll[ll]++
		want.ml[ml]++
		want.of[of]++
	}
	if *cnt != want {
		return fmt.Errorf("the codes' counts differ from the section's")
	}
	return nil
}

// FuzzTheParseAssemblyParsesAsGoDoes runs the assembly and parseWindow on
// the same bytes with options drawn from the fuzzer's, frame by frame and
// block by block, and wants the same literals, sequences, repeat offsets,
// tables and the section's codes.
func FuzzTheParseAssemblyParsesAsGoDoes(f *testing.F) {
	for _, c := range corpus.Cases() {
		f.Add(c.Data[:min(len(c.Data), 20000)], uint8(0), uint16(0))
	}
	f.Add(alternatingCopies(20000, 1), uint8(3), uint16(0x1234))
	f.Fuzz(func(t *testing.T, src []byte, level uint8, bits uint16) {
		if !hasBMI2 {
			t.Skip("this core lacks BMI2: parse runs its Go reference, which it would be compared with")
		}
		if len(src) < 16 {
			return
		}
		opt := WindowOptionsFor(int(level%4), 1+int(bits&1)).dense(src).withDefaults()
		if bits&2 != 0 { // options off the ladder
			opt = WindowOptions{MinMatch: 4 + int(bits>>2)%5, HashLog: 10 + int(bits>>5)%8,
				SearchStrength: 1 + int(bits>>8)%8, Stride: 1 + int(bits>>11)%3, Fill: bits&(1<<14) != 0}
			if bits&(1<<15) != 0 {
				opt.LongHashLog = 10 + int(bits>>5)%8
			}
			if level&4 != 0 {
				opt.Accelerate = opt.SearchStrength + 1 + int(level>>3)%4
			}
			opt = opt.withDefaults()
		}
		goE, asmE, opt := parsers(src, opt)
		maxOff := len(src)
		if bits&(1<<13) != 0 {
			maxOff = 1 + int(bits)%3000
		}
		for start := 0; start < len(src); start += MaxBlockSize {
			end := min(start+MaxBlockSize, len(src))
			goE.parseWindow(src, start, end, maxOff, opt)
			cnt := asmE.parse(src, start, end, maxOff, opt)
			if !slices.Equal(goE.wlits, asmE.wlits) || firstDiff(goE.wseqs, asmE.wseqs) >= 0 ||
				goE.rep != asmE.rep || !slices.Equal(goE.table, asmE.table) || !slices.Equal(goE.long, asmE.long) {
				t.Fatalf("options %+v, window %d, block at %d: the assembly's parse differs from parseWindow's", opt, maxOff, start)
			}
			if err := codedAsTheSectionCodes(asmE.wseqs, &asmE.sw, cnt); err != nil {
				t.Fatalf("options %+v, block at %d: %v", opt, start, err)
			}
		}
	})
}
