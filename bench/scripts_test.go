// Package bench holds the benchmark scripts run on the GPU host and here;
// its tests run the scripts' argument checks, and bench/convert-ab.sh
// whole on the CPU engine, so that a script breaks here rather than in a
// device session's only run.
package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

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
		{"convert-ab refuses a build that is not there", "convert-ab.sh", []string{"A=" + exe, "B=/nonexistent/zspool"},
			"/nonexistent/zspool: not an executable zspool"},
		{"path-host refuses a level that is not a zstd level", "path-host.sh", []string{"ZSPOOL=" + exe, "LEVEL=fast"},
			"LEVEL=fast: a zstd level, -7 to 22"},
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
	dir := t.TempDir()
	exe := filepath.Join(dir, "zspool")
	build := exec.Command("go", "build", "-o", exe, "../cmd/zspool")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct{ data, dtype string }{{"camera", "uint16"}, {"8bit-saturated", "uint8"}} {
		t.Run(tc.data, func(t *testing.T) {
			out, code := script(t, "convert-ab.sh", []string{"A=" + exe, "B=" + exe, "ENGINE=cpu", "LEVELS=1", "ROUNDS=2",
				"DATA=" + tc.data, "SHM=" + t.TempDir()}, "32MiB")
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			if n := strings.Count(out, "cam: in 0.031 GiB"); n != 4 {
				t.Errorf("%d convert summaries, want 4 (2 builds × 2 rounds):\n%s", n, out)
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
		})
	}
}
