package kernels

import (
	"math/bits"
	"os"
	"regexp"
	"strconv"
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
	for _, tc := range []struct {
		name string
		want int
	}{
		{"kSeg", zstdlit.SegmentSize},
		{"kFastHashBits", zstdlit.Options{Level: 1}.SegmentTableBits()},
		{"kStrongHashBits", strongest.SegmentTableBits()},
		{"kMinMatch", strongest.KeyBytes()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := regexp.MustCompile(`constexpr \w+ ` + tc.name + ` = (\d+);`).FindSubmatch(src)
			if m == nil {
				t.Fatalf("zstdlit_parse.cuh defines no %s", tc.name)
			}
			if got, _ := strconv.Atoi(string(m[1])); got != tc.want {
				t.Fatalf("%s = %d in zstdlit_parse.cuh, the reference's is %d", tc.name, got, tc.want)
			}
		})
	}
}

// The host launches the parse and the chunk seeds with thread and part
// counts of its own, which the kernels' CUDA constants must match: a
// zl_cseed grid of other parts than the kernel's split of its table would
// leave positions without their chunk seeds, and only the GPU tests would
// see it.
func TestTheHostLaunchesTheSeedAndParseKernelsAsTheyAreWritten(t *testing.T) {
	src, err := os.ReadFile("zstdlit_parse.cuh")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want int
	}{
		{"kParseThreads", litParseThreads},
		{"kCSeedThreads", litChunkSeedThreads},
		{"kCSeedPartBits", bits.Len(uint(litChunkSeedParts)) - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := regexp.MustCompile(`constexpr \w+ ` + tc.name + ` = (\d+);`).FindSubmatch(src)
			if m == nil {
				t.Fatalf("zstdlit_parse.cuh defines no %s", tc.name)
			}
			if got, _ := strconv.Atoi(string(m[1])); got != tc.want {
				t.Fatalf("%s = %d in zstdlit_parse.cuh, the host launches with %d", tc.name, got, tc.want)
			}
		})
	}
	if litChunkSeedParts&(litChunkSeedParts-1) != 0 {
		t.Fatalf("litChunkSeedParts = %d: the kernel splits its table by hash bits, a power of two", litChunkSeedParts)
	}
}
