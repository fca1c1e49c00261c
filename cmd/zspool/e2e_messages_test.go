package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What a new user meets first: help texts that say only what applies,
// and messages that name the whole path and what is wrong.

func TestHelpTextsListOnlyTheFlagsThatApplyAndTheTrueDefaults(t *testing.T) {
	for _, c := range []struct {
		name    string
		args    []string
		want    []string
		notWant []string
	}{
		// bench writes to --dest, an S3 one too, so the S3 flags apply.
		{"bench takes a destination with its S3 options and says when the source is pinned", []string{"bench", "--help"},
			[]string{"--source", "pinned on the GPU engine unless it compresses on the host, --zstd-encoder klauspost or window", "--dest", "--part-size", "--data"}, []string{"pinned for --engine gpu --codec none"}},
		{"verify lists no write-only flag", []string{"verify", "--help"},
			[]string{"--raw", "--endpoint"}, []string{"--max-parts-in-flight", "--conditional-writes", "--part-size"}},
		{"convert with no argument says what is missing", []string{"convert"},
			[]string{"missing acquisition argument", "Usage: zspool convert"}, nil},
		{"verify with no argument says what is missing", []string{"verify"},
			[]string{"missing dataset argument"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, _ := zspool(t, c.args...)
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("output lacks %q:\n%s", w, stderr)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(stderr, w) {
					t.Errorf("output has %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestVerifyAndConvertMessagesNameThePathAndTheRule(t *testing.T) {
	dir := t.TempDir()
	a := newAcquisition("msg", "uint16", []dimSpec{{3, 1, 3}, {20, 20, 1}, {21, 21, 1}})
	a.randomRaw(5, 3*20*21)
	out := filepath.Join(dir, "out")
	if _, stderr, err := zspool(t, "convert", a.write(t, dir), "--dest", out, "--quiet"); err != nil {
		t.Fatalf("convert: %v\n%s", err, stderr)
	}
	short := filepath.Join(dir, "short.raw")
	writeFile(t, short, string(a.raw[:len(a.raw)-10]))
	missing := filepath.Join(dir, "nope.ome.zarr")
	for _, c := range []struct {
		name string
		args []string
		want string // in the error, or on stdout when the command succeeds
	}{
		{"a missing dataset is named with its directory", []string{"verify", missing}, missing + ": no dataset here"},
		{"the parent of a dataset points at the dataset", []string{"verify", out}, "this directory holds " + filepath.Join(out, "msg.ome.zarr")},
		{"a short raw file is called shorter than level 0", []string{"verify", filepath.Join(out, "msg.ome.zarr"), "--raw", short}, "the raw file is shorter than level 0"},
		{"one level is not called levels", []string{"verify", filepath.Join(out, "msg.ome.zarr")}, "ok: 1 level, 1 shard, 3 chunks decoded"},
		{"a presigned query on the command line is refused and not echoed", []string{"convert", filepath.Join(dir, "msg.json"), "--dest", "s3://bucket/p?X-Amz-Signature=hunter2", "--quiet"}, `"s3://bucket/p?REDACTED": has a query or fragment`},
		{"a bucket name S3 refuses names the rule", []string{"convert", filepath.Join(dir, "msg.json"), "--dest", "s3://zb/p", "--quiet"}, `bucket "zb" is 2 characters long; S3 bucket names have 3 to 63`},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, _, err := zspool(t, c.args...)
			got := stdout
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, c.want) {
				t.Errorf("got %q, want it to contain %q", got, c.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "p")); err == nil {
		t.Error("a refused destination left something behind")
	}
}

// bench's flags are all checked before it opens its destination: an S3
// destination would be probed (and a directory created) for a run that
// cannot start. The destination here has no credentials and an endpoint
// nobody listens on, so opening it would fail with its own error instead
// of the flag's.
func TestBenchRefusesBadFlagsBeforeItOpensTheDestination(t *testing.T) {
	dir := t.TempDir()
	odd := filepath.Join(dir, "odd.raw")
	writeFile(t, odd, strings.Repeat("x", 1000))
	frames := filepath.Join(dir, "frames.raw")
	writeFile(t, frames, strings.Repeat("x", 2*64*64*2))
	dest := []string{"--dest", "s3://bench-bucket/p", "--endpoint", "http://127.0.0.1:1", "--path-style"}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"an unknown source is named", []string{"--source", "disk"}, `--source: "disk" is not file or pinned`},
		{"a file of part frames is refused", []string{"--data", odd, "--frame", "64"}, "1000 bytes is not a whole number of 64×64 uint16 frames"},
		{"a pinned source of a file is refused", []string{"--data", frames, "--frame", "64", "--source", "pinned"}, "--data FILE needs --source file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := zspool(t, append(append([]string{"bench", "--engine", "cpu"}, c.args...), dest...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}
