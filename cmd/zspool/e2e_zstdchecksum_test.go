package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zspool/zspool/config"
)

func TestTheZstdChecksumFlagIsOffUnlessGiven(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want bool
	}{
		{"left out, frames carry no checksum", nil, false},
		{"given, frames carry one", []string{"--zstd-checksum"}, true},
		{"given false, frames carry none", []string{"--zstd-checksum=false"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ef engineFlags
			fs := newFlags("convert", "", &bytes.Buffer{})
			ef.register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			o, err := ef.options()
			if err != nil || o.ZstdChecksum != tc.want {
				t.Fatalf("ZstdChecksum = %v (%v), want %v", o.ZstdChecksum, err, tc.want)
			}
		})
	}
}

func TestTheBenchHeaderSaysWhenFramesCarryAChecksum(t *testing.T) {
	tests := []struct {
		name  string
		extra []string
		want  bool
	}{
		{"with --zstd-checksum it says so", []string{"--zstd-checksum"}, true},
		{"without it, it says nothing", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "--engine", "cpu", "--size", "1MiB", "--frame", "256", "--chunk", "64"}, tc.extra...)
			out, stderr, err := zspool(t, args...)
			if err != nil {
				t.Fatalf("bench: %v\n%s", err, stderr)
			}
			// The header's second line ends with the codec's details.
			if got := strings.Contains(out, "codec zstd level 1, checksum\n"); got != tc.want {
				t.Fatalf("the header names the checksum: %v, want %v\n%s", got, tc.want, out)
			}
		})
	}
}

func TestTheDaemonConfigsZstdChecksumReachesTheDaemonOptionsAndConfigCheck(t *testing.T) {
	base := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(base, "spool"), 0o755))
	tests := []struct {
		name, line  string
		want        bool
		yaml, check string
	}{
		{"left out, it is off", "", false, "zstd_checksum: false\n", "# zstd checksum: off"},
		{"false is off", "zstd_checksum: false\n", false, "zstd_checksum: false\n", "# zstd checksum: off"},
		{"true is on", "zstd_checksum: true\n", true, "zstd_checksum: true\n", "# zstd checksum: on"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := "spool_dir: " + filepath.Join(base, "spool") + "\nstate_dir: " + filepath.Join(base, "state") +
				"\ndestination:\n  url: " + filepath.Join(base, "out") + "\n" + tc.line
			c, err := config.ParseDaemon([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			o, err := daemonOptions(c)
			if err != nil || o.ZstdChecksum != tc.want {
				t.Fatalf("daemon options carry ZstdChecksum %v (%v), want %v", o.ZstdChecksum, err, tc.want)
			}
			p := filepath.Join(base, string(rune('a'+i))+".yaml")
			writeFile(t, p, doc)
			out, stderr, err := zspool(t, "config", "check", "--offline", p)
			if err != nil || !strings.Contains(out, "\n"+tc.yaml) || !strings.Contains(out, tc.check) {
				t.Fatalf("config check: %v; want %q and %q in\n%s%s", err, tc.yaml, tc.check, out, stderr)
			}
		})
	}
}
