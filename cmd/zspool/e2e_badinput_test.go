package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zspool/zspool/pipeline"
)

// badCase breaks one rule of MANIFEST.md (or of the raw file) once.
type badCase struct {
	name  string
	edit  func(a *acquisition)                           // change the manifest or raw bytes
	after func(t *testing.T, dir string, a *acquisition) // change files after writing
	want  string                                         // a phrase the error must contain
	input bool                                           // the error must be an InputError
}

func dims(a *acquisition) []map[string]any { return a.manifest["dimensions"].([]map[string]any) }

func badCases() []badCase {
	return []badCase{
		{name: "an unknown top-level field", edit: func(a *acquisition) { a.manifest["colour"] = "red" }, want: "colour: unknown field", input: true},
		{name: "an unknown dimension field", edit: func(a *acquisition) { dims(a)[0]["stride"] = 2 }, want: "dimensions[0].stride", input: true},
		{name: "version 2", edit: func(a *acquisition) { a.manifest["version"] = 2 }, want: "version", input: true},
		{name: "a missing version", edit: func(a *acquisition) { delete(a.manifest, "version") }, want: "version", input: true},
		{name: "a missing dtype", edit: func(a *acquisition) { delete(a.manifest, "dtype") }, want: "dtype", input: true},
		{name: "an unknown dtype", edit: func(a *acquisition) { a.manifest["dtype"] = "uint12" }, want: "dtype", input: true},
		{name: "a middle byte order", edit: func(a *acquisition) { a.manifest["byte_order"] = "middle" }, want: "byte_order", input: true},
		{name: "a name with a slash", edit: func(a *acquisition) { a.manifest["name"] = "a/b" }, want: "name", input: true},
		{name: "a name of dot dot", edit: func(a *acquisition) { a.manifest["name"] = ".." }, want: "name", input: true},
		{name: "a name of 129 characters", edit: func(a *acquisition) { a.manifest["name"] = strings.Repeat("n", 129) }, want: "name", input: true},
		{name: "data reaching out with dot dot", edit: func(a *acquisition) { a.manifest["data"] = "../bad.raw" }, want: "data", input: true},
		{name: "data in a subdirectory", edit: func(a *acquisition) { a.manifest["data"] = "sub/bad.raw" }, want: "data", input: true},
		{name: "no dimensions", edit: func(a *acquisition) { a.manifest["dimensions"] = []map[string]any{} }, want: "dimensions", input: true},
		{name: "nine dimensions", edit: func(a *acquisition) {
			var ds []map[string]any
			for i := range 9 {
				ds = append(ds, map[string]any{"name": string(rune('a' + i)), "size": 1})
			}
			a.manifest["dimensions"] = ds
		}, want: "dimensions", input: true},
		{name: "an uppercase dimension name", edit: func(a *acquisition) { dims(a)[1]["name"] = "Y" }, want: "dimensions[1].name", input: true},
		{name: "a duplicate dimension name", edit: func(a *acquisition) { dims(a)[2]["name"] = "b" }, want: "dimensions[2].name", input: true},
		{name: "an unknown dimension type", edit: func(a *acquisition) { dims(a)[1]["type"] = "wavelength" }, want: "dimensions[1].type", input: true},
		{name: "size 0 on an inner dimension", edit: func(a *acquisition) { dims(a)[1]["size"] = 0 }, want: "dimensions[1].size", input: true},
		{name: "a negative size", edit: func(a *acquisition) { dims(a)[0]["size"] = -4 }, want: "dimensions[0].size", input: true},
		{name: "chunk 0", edit: func(a *acquisition) { dims(a)[2]["chunk"] = 0 }, want: "dimensions[2].chunk: 0 is not in 1…8", input: true},
		{name: "a chunk larger than its size", edit: func(a *acquisition) { dims(a)[1]["chunk"] = 7 }, want: "dimensions[1].chunk", input: true},
		{name: "shard 0", edit: func(a *acquisition) { dims(a)[1]["shard"] = 0 }, want: "dimensions[1].shard", input: true},
		{name: "scale 0", edit: func(a *acquisition) { dims(a)[2]["scale"] = 0 }, want: "dimensions[2].scale", input: true},
		{name: "a negative scale", edit: func(a *acquisition) { dims(a)[2]["scale"] = -0.5 }, want: "dimensions[2].scale", input: true},
		{name: "a median multiscale", edit: func(a *acquisition) { a.manifest["multiscale"] = map[string]any{"method": "median"} }, want: "multiscale.method", input: true},
		{name: "negative levels", edit: func(a *acquisition) { a.manifest["multiscale"] = map[string]any{"levels": -1} }, want: "multiscale.levels", input: true},
		{name: "an lz4 codec", edit: func(a *acquisition) { a.manifest["compression"] = map[string]any{"codec": "lz4"} }, want: "compression.codec", input: true},
		{name: "zstd level 23", edit: func(a *acquisition) { a.manifest["compression"] = map[string]any{"level": 23} }, want: "compression.level", input: true},
		{name: "attributes claiming ome", edit: func(a *acquisition) { a.manifest["attributes"] = map[string]any{"ome": 1} }, want: "attributes.ome", input: true},
		{name: "attributes that are not an object", edit: func(a *acquisition) { a.manifest["attributes"] = []int{1} }, want: "attributes", input: true},
		{name: "a manifest that is not JSON", after: func(t *testing.T, dir string, a *acquisition) {
			writeFile(t, filepath.Join(dir, a.name+".json"), "version: 1\n")
		}, want: "JSON", input: true},
		{name: "an empty manifest", after: func(t *testing.T, dir string, a *acquisition) {
			writeFile(t, filepath.Join(dir, a.name+".json"), "")
		}, want: "empty", input: true},
		{name: "a truncated raw file", edit: func(a *acquisition) { a.raw = a.raw[:len(a.raw)-2] }, want: "truncated", input: true},
		{name: "an oversized raw file", edit: func(a *acquisition) { a.raw = append(a.raw, 0, 0) }, want: "oversized", input: true},
		{name: "an inferred dim 0 that is not whole frames", edit: func(a *acquisition) {
			dims(a)[0]["size"] = 0
			a.raw = append(a.raw, 1, 2)
		}, want: "whole number", input: true},
		{name: "a missing raw file", after: func(t *testing.T, dir string, a *acquisition) {
			must(t, os.Remove(filepath.Join(dir, a.name+".raw")))
		}, want: "does not exist", input: true},
		{name: "a symlinked raw file", after: func(t *testing.T, dir string, a *acquisition) {
			p := filepath.Join(dir, a.name+".raw")
			must(t, os.Rename(p, p+".real"))
			must(t, os.Symlink(p+".real", p))
		}, want: "symlink", input: true},
		{name: "a raw file that is a directory", after: func(t *testing.T, dir string, a *acquisition) {
			p := filepath.Join(dir, a.name+".raw")
			must(t, os.Remove(p))
			must(t, os.Mkdir(p, 0o755))
		}, want: "not a regular file", input: true},
		{name: "a symlinked manifest", after: func(t *testing.T, dir string, a *acquisition) {
			p := filepath.Join(dir, a.name+".json")
			must(t, os.Rename(p, filepath.Join(dir, "real.manifest")))
			must(t, os.Symlink(filepath.Join(dir, "real.manifest"), p))
		}, want: "symlink", input: true},
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	must(t, os.WriteFile(p, []byte(s), 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestBadInputIsRefusedWithAClearErrorAndWritesNothing(t *testing.T) {
	cases := badCases()
	if len(cases) < 25 {
		t.Fatalf("only %d bad-input cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spool := t.TempDir()
			dest := filepath.Join(t.TempDir(), "out")
			a := newAcquisition("bad", "uint16", []dimSpec{{4, 2, 1}, {6, 3, 2}, {8, 8, 1}})
			a.randomRaw(3, 4*6*8)
			if tc.edit != nil {
				tc.edit(a)
			}
			mp := a.write(t, spool)
			if tc.after != nil {
				tc.after(t, spool, a)
			}
			src, err := pipeline.OpenSource(mp)
			if err == nil {
				_, err = pipeline.NewPlan(src.Manifest, src.RawName, src.RawSize, pipeline.Options{})
				src.Close()
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if tc.input && !pipeline.IsInputError(err) {
				t.Errorf("error %q is not an input error", err)
			}
			_, _, cerr := zspool(t, "convert", mp, "--dest", dest, "--quiet")
			if cerr == nil || !strings.Contains(cerr.Error(), tc.want) {
				t.Fatalf("convert error %v, want one containing %q", cerr, tc.want)
			}
			if _, err := os.Stat(dest); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("destination was written to: %v", err)
			}
		})
	}
}

func TestPlansThatCannotRunNameTheKnobToChange(t *testing.T) {
	spool := t.TempDir()
	a := newAcquisition("big", "uint16", []dimSpec{{4, 4, 1}, {512, 512, 1}, {512, 512, 1}})
	a.randomRaw(1, 4*512*512)
	mp := a.write(t, spool)
	dest := filepath.Join(t.TempDir(), "out")
	_, _, err := zspool(t, "convert", mp, "--dest", dest, "--memory-budget", "1MiB", "--quiet")
	if err == nil || !strings.Contains(err.Error(), "memory_budget") {
		t.Fatalf("err = %v, want a memory_budget refusal", err)
	}
	_, _, err = zspool(t, "convert", mp, "--dest", dest, "--part-size", "1MiB", "--quiet")
	if err == nil || !strings.Contains(err.Error(), "part_size") {
		t.Fatalf("err = %v, want a part_size refusal", err)
	}
	if _, err := os.Stat(dest); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("destination was written to: %v", err)
	}
}
