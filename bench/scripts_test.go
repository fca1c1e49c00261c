// Package bench holds the benchmark scripts run on the GPU host and here;
// its tests run the scripts' argument checks, bench/convert-ab.sh whole on
// the CPU engine and bench/kernels-ab.sh on stand-in test binaries, so
// that a script breaks here rather than in a device session's only run.
package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zspool/zspool/internal/s3test"
)

// built is zspool, built once for the tests that run whole scripts with
// it, into a directory TestMain removes.
var built struct {
	once      sync.Once
	dir, path string
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// zspoolBinary is the path of zspool built from ../cmd/zspool, the first
// call building it.
func zspoolBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "zspool-bench-test"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "zspool")
		if out, err := exec.Command("go", "build", "-o", built.path, "../cmd/zspool").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// script runs bench/NAME with bash and the extra environment, and returns
// its combined output and exit code.
func script(t *testing.T, name string, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{name}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
	return string(out), 0
}

func TestTheScriptsRefuseBadArgumentsBeforeAnyWork(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "zspool")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho should not run >&2; exit 9\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		script string
		env    []string
		want   string
	}{
		{"convert-ab refuses a level that is not a zstd level", "convert-ab.sh", []string{"A=" + exe, "LEVELS=1 x"},
			"LEVELS: x is not a zstd level, -7 to 22"},
		{"convert-ab refuses zero rounds", "convert-ab.sh", []string{"A=" + exe, "ROUNDS=0"},
			"ROUNDS=0: a count, 1 to 99"},
		{"convert-ab refuses data it cannot make", "convert-ab.sh", []string{"A=" + exe, "DATA=noise"},
			"DATA=noise: camera, dim, flat, 8bit or 8bit-saturated"},
		{"convert-ab refuses a checksum switch other than 0 or 1", "convert-ab.sh", []string{"A=" + exe, "CHECKSUM=yes"},
			"CHECKSUM=yes: 0 or 1"},
		{"convert-ab refuses an S3 switch other than 0 or 1", "convert-ab.sh", []string{"A=" + exe, "S3=yes"},
			"S3=yes: 0 or 1"},
		{"convert-ab refuses S3 without a versitygw binary", "convert-ab.sh",
			[]string{"A=" + exe, "S3=1", "VERSITYGW=/nonexistent/versitygw.xz"},
			"VERSITYGW=/nonexistent/versitygw.xz: no versitygw binary there"},
		{"convert-ab refuses a build that is not there", "convert-ab.sh", []string{"A=" + exe, "B=/nonexistent/zspool"},
			"/nonexistent/zspool: not an executable zspool"},
		{"path-host refuses a level that is not a zstd level", "path-host.sh", []string{"ZSPOOL=" + exe, "LEVEL=fast"},
			"LEVEL=fast: a zstd level, -7 to 22"},
		{"kernels-ab refuses zero rounds", "kernels-ab.sh", []string{"A=" + exe, "ROUNDS=0"},
			"ROUNDS=0: a count, 1 to 99"},
		{"kernels-ab refuses a benchtime that is not a count of runs", "kernels-ab.sh", []string{"A=" + exe, "BENCHTIME=5s"},
			"BENCHTIME=5s: runs of the batch, as 20x"},
		{"kernels-ab refuses a build that is not there", "kernels-ab.sh", []string{"A=" + exe, "B=/nonexistent/kernels.test"},
			"/nonexistent/kernels.test: not an executable kernels test binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := script(t, tc.script, append(tc.env, "SHM="+t.TempDir()))
			if code != 2 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, tc.want)
			}
			if strings.Contains(out, "should not run") {
				t.Fatalf("the script ran zspool before refusing:\n%s", out)
			}
		})
	}
}

// TestConvertABComparesTwoBuildsOnTheCPU runs the script whole with the
// CPU engine, the same build as A and B, on 16-bit and on 8-bit frames:
// every round converts, and the summary has a row per build whose stored
// bytes agree.
func TestConvertABComparesTwoBuildsOnTheCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("builds zspool and converts 32 MiB eight times")
	}
	exe := zspoolBinary(t)
	// stored is each run's stored bytes, by data and checksum switch.
	stored := map[string]int64{}
	for _, tc := range []struct{ data, dtype, checksum string }{
		{"camera", "uint16", "0"}, {"8bit-saturated", "uint8", "0"}, {"8bit-saturated", "uint8", "1"},
	} {
		t.Run(tc.data+"/checksum="+tc.checksum, func(t *testing.T) {
			out, code := script(t, "convert-ab.sh", []string{"A=" + exe, "B=" + exe, "ENGINE=cpu", "LEVELS=1", "ROUNDS=2",
				"DATA=" + tc.data, "CHECKSUM=" + tc.checksum, "SHM=" + t.TempDir()}, "32MiB")
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			if n := strings.Count(out, "cam: in 0.031 GiB"); n != 4 {
				t.Errorf("%d convert summaries, want 4 (2 builds × 2 rounds):\n%s", n, out)
			}
			// A first in round 1, B first in round 2.
			order := regexp.MustCompile(`(?m)^round (\d) level 1 build ([AB]):`).FindAllStringSubmatch(out, -1)
			var got []string
			for _, m := range order {
				got = append(got, m[1]+m[2])
			}
			if strings.Join(got, " ") != "1A 1B 2B 2A" {
				t.Errorf("converts in the order %v, want 1A 1B 2B 2A:\n%s", got, out)
			}
			if !strings.Contains(out, "camera data ("+tc.data+", "+tc.dtype+")") {
				t.Errorf("the summary does not name the data as %s, %s:\n%s", tc.data, tc.dtype, out)
			}
			rows := regexp.MustCompile(`(?m)^([AB]) +1 +([0-9.]+) ([0-9.]+) +([0-9.]+) +\S+ +(\d+) *$`).FindAllStringSubmatch(out, -1)
			if len(rows) != 2 {
				t.Fatalf("%d summary rows, want one for A and one for B:\n%s", len(rows), out)
			}
			if rows[0][1] != "A" || rows[1][1] != "B" || rows[0][5] != rows[1][5] {
				t.Fatalf("rows %q and %q: want A then B with the same stored bytes", rows[0][0], rows[1][0])
			}
			if got := strings.Contains(out, ", --zstd-checksum,"); got != (tc.checksum == "1") {
				t.Errorf("the summary names --zstd-checksum: %v, want %v:\n%s", got, tc.checksum == "1", out)
			}
			n, err := strconv.ParseInt(rows[0][5], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			stored[tc.data+"/"+tc.checksum] = n
		})
	}
	// The checksum reached the converts: each frame is 4 bytes longer.
	off, on := stored["8bit-saturated/0"], stored["8bit-saturated/1"]
	if off == 0 || on == 0 {
		t.Fatalf("stored bytes without and with the checksum: %d and %d", off, on)
	}
	if d := on - off; d <= 0 || d%4 != 0 {
		t.Errorf("stored %d bytes with --zstd-checksum and %d without: want more, by 4 bytes a frame", on, off)
	}
}

// TestConvertABComparesTwoBuildsOnS3 runs the script whole with S3=1 and
// the CPU engine: it starts versitygw itself, both builds convert to it,
// the server's copy holds as many bytes as the same convert writes to a
// directory, and the server is gone when the script exits.
func TestConvertABComparesTwoBuildsOnS3(t *testing.T) {
	if testing.Short() {
		t.Skip("builds zspool and converts 32 MiB four times")
	}
	gw := s3test.VersityGWBinary(t)
	exe := zspoolBinary(t)
	row := regexp.MustCompile(`(?m)^([AB]) +1 +([0-9.]+) +([0-9.]+) +\S+ +(\d+) *$`)
	stored := map[string][]string{}
	for _, s3 := range []string{"0", "1"} {
		shm := t.TempDir()
		out, code := script(t, "convert-ab.sh", []string{"A=" + exe, "B=" + exe, "ENGINE=cpu", "LEVELS=1", "ROUNDS=1",
			"S3=" + s3, "VERSITYGW=" + gw, "SHM=" + shm}, "32MiB")
		if code != 0 {
			t.Fatalf("S3=%s: exit %d:\n%s", s3, code, out)
		}
		for _, m := range row.FindAllStringSubmatch(out, -1) {
			stored[s3] = append(stored[s3], m[4])
		}
		if len(stored[s3]) != 2 || stored[s3][0] != stored[s3][1] {
			t.Fatalf("S3=%s: stored bytes by build %v, want two equal rows:\n%s", s3, stored[s3], out)
		}
		if s3 == "1" {
			if n := strings.Count(out, "GiB/s -> s3://bench/ab"); n != 2 {
				t.Errorf("%d converts to s3://bench/ab, want 2:\n%s", n, out)
			}
			if !strings.Contains(out, "engine cpu → versitygw on tmpfs, 1 rounds") {
				t.Errorf("the summary does not say the converts went to versitygw:\n%s", out)
			}
			if pids := processesUnder(t, shm); len(pids) != 0 {
				t.Errorf("processes still running from %s after the script: %v", shm, pids)
			}
		}
	}
	if stored["0"][0] != stored["1"][0] {
		t.Errorf("stored %s bytes on versitygw and %s in a directory: want the same objects", stored["1"][0], stored["0"][0])
	}
}

// TestConvertABStopsAndCleansUpWhenTheServerDoesNotStart gives S3=1 a
// versitygw that exits at once: the script fails with the server's own
// words, and leaves no work directory (a 16 GiB raw file on tmpfs, on a
// GPU host) behind.
func TestConvertABStopsAndCleansUpWhenTheServerDoesNotStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds zspool and generates 32 MiB")
	}
	dir := t.TempDir()
	exe := zspoolBinary(t)
	gw := filepath.Join(dir, "versitygw")
	if err := os.WriteFile(gw, []byte("#!/bin/sh\necho unknown flag --health >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	shm := t.TempDir()
	out, code := script(t, "convert-ab.sh", []string{"A=" + exe, "ENGINE=cpu", "ROUNDS=1", "S3=1", "VERSITYGW=" + gw,
		"SHM=" + shm}, "32MiB")
	if code == 0 || !strings.Contains(out, "versitygw did not take connections on http://127.0.0.1:") ||
		!strings.Contains(out, "unknown flag --health") {
		t.Fatalf("exit %d, output:\n%s\nwant a failure naming the endpoint, with the server's log", code, out)
	}
	left, err := os.ReadDir(shm)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the script left %d entries in SHM (%s first)", len(left), left[0].Name())
	}
}

// processesUnder lists the pids whose command line names a path under dir.
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), dir) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// fakeKernelsTest writes a stand-in for the kernels test binary that
// prints BenchmarkLitKernels lines as go test does, after checking that it
// was asked for the benchmark's pattern. Its level-1 ns/op is ns1[k] on
// its k-th run (a counter file beside it), its level-3 ns/op always ns3.
func fakeKernelsTest(t *testing.T, dir, name string, ns1 []int, kernel1 []string, ns3 int) string {
	t.Helper()
	p := filepath.Join(dir, name)
	cases := ""
	for k, ns := range ns1 {
		cases += fmt.Sprintf("%d) ns1=%d kernel1=%s ;; ", k, ns, kernel1[k])
	}
	body := `#!/bin/sh
case "$*" in *"-test.bench BenchmarkLitKernels/camera-"*) ;; *) echo "unexpected arguments: $*" >&2; exit 3 ;; esac
k=$(cat "$0.runs" 2>/dev/null || echo 0)
echo $((k + 1)) >"$0.runs"
case $k in ` + cases + `*) echo "run $k: more runs than rounds" >&2; exit 3 ;; esac
printf 'goos: linux\n'
printf 'BenchmarkLitKernels/camera-dim/chunk=2048KiB/level=1-16 \t      20\t  %d ns/op\t57995.61 MB/s\t        %s kernelGB/s\t         0.9144 pack-ms\t         6.684 parse-ms\t         3.589 ratio\t         1.583 rest-ms\t         4.206 seed-ms\t         4.737 seq-ms\n' "$ns1" "$kernel1"
printf 'BenchmarkLitKernels/camera-dim/chunk=2048KiB/level=3-16 \t      20\t  %d ns/op\t26993.60 MB/s\t        27.29 kernelGB/s\t         0.7996 pack-ms\t         11.93 parse-ms\t         3.666 ratio\t         1.201 rest-ms\t         20.70 seed-ms\t         4.717 seq-ms\n' ` +
		strconv.Itoa(ns3) + `
printf 'PASS\n'
`
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKernelsABTabulatesTwoBuildsRoundByRound runs bench/kernels-ab.sh on
// two stand-in binaries: each round runs both, and the table has a row
// per benchmark and build with each round's GB/s from its ns/op, their
// median (not their mean or the best), the median of the event-timed
// kernelGB/s, the stages' milliseconds and the ratio.
func TestKernelsABTabulatesTwoBuildsRoundByRound(t *testing.T) {
	dir := t.TempDir()
	// 1 GiB in these ns/op: 40, 58 and 50 GB/s; 25 and 26.99.
	a := fakeKernelsTest(t, dir, "a.test", []int{26843546, 18514193, 21474836}, []string{"59.24", "61.5", "41.07"}, 39777648)
	b := fakeKernelsTest(t, dir, "b.test", []int{42949672, 42949672, 42949672}, []string{"26.1", "26.1", "26.1"}, 42949672)
	out, code := script(t, "kernels-ab.sh", []string{"A=" + a, "B=" + b, "ROUNDS=3"})
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if n := strings.Count(out, "== round "); n != 6 {
		t.Errorf("%d runs, want 6 (2 builds × 3 rounds):\n%s", n, out)
	}
	for _, want := range []string{
		"camera-dim/chunk=2048KiB/level=1 A 40.00 58.00 50.00 50.00 59.24 4.21 6.68 4.74 0.91 1.58 3.589",
		"camera-dim/chunk=2048KiB/level=1 B 25.00 25.00 25.00 25.00 26.10 4.21 6.68 4.74 0.91 1.58 3.589",
		"camera-dim/chunk=2048KiB/level=3 A 26.99 26.99 26.99 26.99 27.29 20.70 11.93 4.72 0.80 1.20 3.666",
		"camera-dim/chunk=2048KiB/level=3 B 25.00 25.00 25.00 25.00 27.29 20.70 11.93 4.72 0.80 1.20 3.666",
	} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if strings.Join(strings.Fields(line), " ") == want {
				found = true
			}
		}
		if !found {
			t.Errorf("no table row %q in:\n%s", want, out)
		}
	}
}

// TestKernelsABSaysSoWhenNoBenchmarkRan: on a host without a GPU the
// benchmark skips, and the script fails with a reason instead of printing
// an empty table.
func TestKernelsABSaysSoWhenNoBenchmarkRan(t *testing.T) {
	p := filepath.Join(t.TempDir(), "skip.test")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho '--- SKIP: BenchmarkLitKernels'\necho PASS\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, code := script(t, "kernels-ab.sh", []string{"A=" + p})
	if code != 1 || !strings.Contains(out, "no benchmark ran: no usable GPU") {
		t.Fatalf("exit %d, output:\n%s\nwant exit 1 naming the reason", code, out)
	}
}
