package kernels

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/zspool/zspool/zstdlit"
)

// The parse kernels spell the reference's segment geometry in CUDA C, and
// the kernels' tests, which would catch a mismatch, run only on a GPU. CI
// has none, so it reads the constants from the source: a change to
// zstdlit's segments that leaves the kernels behind fails here too.
func TestTheParseKernelsSegmentGeometryIsTheReferences(t *testing.T) {
	src, err := os.ReadFile("zstdlit_parse.cuh")
	if err != nil {
		t.Fatal(err)
	}
	strongest := zstdlit.Options{Level: 3}
	sameConstants(t, "zstdlit_parse.cuh", src, "the reference's", []cudaConstant{
		{"kSeg", zstdlit.SegmentSize},
		{"kFastHashBits", zstdlit.Options{Level: 1}.SegmentTableBits()},
		{"kGridHashBits", zstdlit.Options{Level: 1, ElemSize: 2}.SegmentTableBits()},
		{"kStrongHashBits", strongest.SegmentTableBits()},
		{"kMinMatch", strongest.KeyBytes()},
		{"kFastKey", zstdlit.Options{Level: 1}.KeyBytes()},
		{"kFastSeedBits", zstdlit.Options{Level: 1}.SeedBits()},
		{"kStrongKey", strongest.KeyBytes()},
		{"kStrongSeedBits", strongest.SeedBits()},
	})
}

// cudaConstant is a constexpr of a CUDA source and the value the Go side
// has for it.
type cudaConstant struct {
	name string
	want int
}

// sameConstants reads each constant's value from src, the text of file,
// and compares it with the Go side's, whose is naming it in the failure.
func sameConstants(t *testing.T, file string, src []byte, whose string, cs []cudaConstant) {
	t.Helper()
	for _, tc := range cs {
		t.Run(tc.name, func(t *testing.T) {
			m := regexp.MustCompile(`constexpr \w+ ` + tc.name + ` = (\d+);`).FindSubmatch(src)
			if m == nil {
				t.Fatalf("%s defines no %s", file, tc.name)
			}
			if got, _ := strconv.Atoi(string(m[1])); got != tc.want {
				t.Fatalf("%s = %d in %s, %s is %d", tc.name, got, file, whose, tc.want)
			}
		})
	}
}

// The host launches the parse, the chunk seeds, the own candidates, the
// sequences and the tree descriptions with thread and part counts of its
// own, and sizes the blocks' plans, which the kernels' CUDA constants must
// match: a zl_cseed grid of other parts than the kernel's split of its
// table would leave positions without their chunk seeds, a zl_seq grid of
// other warps a CTA blocks without their sequences, a zl_tree grid of
// other threads blocks without their type, plans smaller than the
// kernels' Block writes past the allocation, and only the GPU tests would
// see it.
func TestTheHostLaunchesTheSeedAndParseKernelsAsTheyAreWritten(t *testing.T) {
	src, err := os.ReadFile("zstdlit_parse.cuh")
	if err != nil {
		t.Fatal(err)
	}
	sameConstants(t, "zstdlit_parse.cuh", src, "the host's launch", []cudaConstant{
		{"kParseThreads", litParseThreads},
		{"kCSeedThreads", litChunkSeedThreads},
		{"kOwnWarps", litOwnWarps},
		{"kSlotStride", litSlotStride},
	})
	seq, err := os.ReadFile("zstdlit_seq.cuh")
	if err != nil {
		t.Fatal(err)
	}
	sameConstants(t, "zstdlit_seq.cuh", seq, "the host's launch", []cudaConstant{{"kSeqWarps", litSeqWarps}})
	tree, err := os.ReadFile("zstdlit_tree.cuh")
	if err != nil {
		t.Fatal(err)
	}
	sameConstants(t, "zstdlit_tree.cuh", tree, "the host's launch", []cudaConstant{{"kTreeThreads", litTreeThreads}})
	lit, err := os.ReadFile("zstdlit.cuh")
	if err != nil {
		t.Fatal(err)
	}
	sameConstants(t, "zstdlit.cuh", lit, "the host's allocation", []cudaConstant{{"kBlockBytes", litBlockBytes}})
}

// zl_cseed keeps its part of the chunk table in shared memory, and every
// part hashes the whole chunk: the host splits the table into the fewest
// parts whose shared memory the GPU grants a CTA.
func TestTheChunkTableSplitsIntoTheFewestPartsThatFit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		parts int
	}{
		{"an H100's 227 KiB take three parts", 232448, 3},
		{"an A100's 163 KiB take four", 166912, 4},
		{"exactly a quarter of the table takes four", 128 << 10, 4},
		{"a byte less than a quarter takes five", 128<<10 - 1, 5},
		{"99 KiB take six", 101376, 6},
		{"48 KiB take eleven", 48 << 10, 11},
		{"the whole table takes one", 512 << 10, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts, err := litChunkParts(17, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if parts != tc.parts {
				t.Fatalf("%d parts, want %d", parts, tc.parts)
			}
			if b := litChunkPartBytes(17, parts); b > tc.limit {
				t.Fatalf("a part takes %d bytes, more than %d", b, tc.limit)
			}
		})
	}
	if _, err := litChunkParts(17, 16<<10); err == nil || !strings.Contains(err.Error(), "512 KiB") {
		t.Fatalf("16 KiB a CTA: %v, want an error naming the table's 512 KiB", err)
	}
}
