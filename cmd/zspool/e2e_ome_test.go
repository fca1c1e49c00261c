package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// OME-NGFF 0.5 as viewers and validators read it: the metadata people
// look for, and verify holding every dataset to the spec.

// fiveD is the manifest contract's 5-D example, small: t, c, z, y, x with
// three named, coloured channels and units given the short way.
func fiveD(t *testing.T, dir string) (manifest string) {
	t.Helper()
	a := newAcquisition("cells", "uint16", []dimSpec{{4, 1, 2}, {3, 1, 1}, {5, 5, 1}, {24, 8, 3}, {20, 8, 3}})
	names := []string{"t", "c", "z", "y", "x"}
	for d, dm := range dims(a) {
		dm["name"] = names[d]
	}
	dims(a)[0]["unit"], dims(a)[0]["scale"] = "ms", 50.0
	dims(a)[2]["unit"], dims(a)[2]["scale"] = "um", 2.0
	dims(a)[3]["unit"], dims(a)[3]["scale"] = "µm", 0.65
	dims(a)[4]["unit"], dims(a)[4]["scale"] = "micrometer", 0.65
	a.manifest["multiscale"] = map[string]any{"method": "mean"}
	a.manifest["channels"] = []any{
		map[string]any{"label": "DAPI", "color": "0000FF"},
		map[string]any{"label": "GFP", "color": "00FF00", "window": []any{100, 3000}},
		map[string]any{"label": "RFP", "color": "#ff0000"},
	}
	a.randomRaw(19, 4*3*5*24*20)
	return a.write(t, dir)
}

func TestTheFiveDExampleHasNamedColouredChannelsAndSpecUnits(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if _, stderr, err := zspool(t, "convert", fiveD(t, dir), "--dest", out, "--quiet"); err != nil {
		t.Fatalf("convert: %v\n%s", err, stderr)
	}
	root := filepath.Join(out, "cells.ome.zarr")
	var g struct {
		Attributes struct {
			OME struct {
				Multiscales []struct {
					Axes     []struct{ Name, Type, Unit string } `json:"axes"`
					Type     string                              `json:"type"`
					Metadata map[string]any                      `json:"metadata"`
				} `json:"multiscales"`
				Omero struct {
					Channels []struct {
						Label, Color string
						Window       struct{ Start, End, Min, Max float64 }
					} `json:"channels"`
				} `json:"omero"`
			} `json:"ome"`
		} `json:"attributes"`
	}
	b, err := os.ReadFile(filepath.Join(root, "zarr.json"))
	must(t, err)
	must(t, json.Unmarshal(b, &g))
	ms := g.Attributes.OME.Multiscales[0]
	var units []string
	for _, a := range ms.Axes {
		units = append(units, a.Name+":"+a.Type+":"+a.Unit)
	}
	if got, want := strings.Join(units, " "), "t:time:millisecond c:channel: z:space:micrometer y:space:micrometer x:space:micrometer"; got != want {
		t.Errorf("axes %s, want %s", got, want)
	}
	if ms.Type != "mean" || ms.Metadata["method"] != "zspool.mean" {
		t.Errorf("multiscale type %q, metadata %v", ms.Type, ms.Metadata)
	}
	chans := g.Attributes.OME.Omero.Channels
	if len(chans) != 3 || chans[0].Label != "DAPI" || chans[1].Color != "00FF00" || chans[2].Color != "FF0000" {
		t.Fatalf("omero channels %+v", chans)
	}
	if w := chans[1].Window; w.Start != 100 || w.End != 3000 || w.Min != 0 || w.Max != 65535 {
		t.Errorf("GFP window %+v, want 100…3000 within 0…65535", w)
	}
	if w := chans[0].Window; w.Start != 0 || w.End != 65535 {
		t.Errorf("DAPI's default window %+v, want the uint16 range", w)
	}
	if stdout, _, err := zspool(t, "verify", root); err != nil || !strings.Contains(stdout, "ok") {
		t.Fatalf("verify: %v %s", err, stdout)
	}
	checkWithZarrita(t, []interopCase{{Dataset: root, Level: 0, Raw: filepath.Join(dir, "cells.raw")}, {Dataset: root, Level: 1}})
}

func TestVerifyFailsOnGroupMetadataThatBreaksTheSpecNamingTheRule(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if _, stderr, err := zspool(t, "convert", fiveD(t, dir), "--dest", out, "--quiet"); err != nil {
		t.Fatalf("convert: %v\n%s", err, stderr)
	}
	root := filepath.Join(out, "cells.ome.zarr")
	orig, err := os.ReadFile(filepath.Join(root, "zarr.json"))
	must(t, err)
	for _, c := range []struct {
		name string
		edit func(ms map[string]any)
		want string
	}{
		{"an axis type moved out of order", func(ms map[string]any) { axis(ms, 2)["type"] = "time" }, "z is out of place"},
		{"a unit the spec does not list", func(ms map[string]any) { axis(ms, 4)["unit"] = "um" }, `unit "um" is not one of OME-NGFF 0.5's space units`},
		{"a time unit on a space axis", func(ms map[string]any) { axis(ms, 3)["unit"] = "second" }, `unit "second" is not one of OME-NGFF 0.5's space units`},
		{"axes in the wrong order", func(ms map[string]any) {
			axes := ms["axes"].([]any)
			axes[0], axes[1] = axes[1], axes[0]
		}, "is out of place"},
		{"a dataset without its scale", func(ms map[string]any) {
			ds := ms["datasets"].([]any)[0].(map[string]any)
			ds["coordinateTransformations"] = []any{map[string]any{"type": "translation", "translation": []any{0, 0, 0, 0, 0}}}
		}, "coordinateTransformations"},
		{"no metadata (the strict schema)", func(ms map[string]any) { delete(ms, "metadata") }, "missing property 'metadata'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var g map[string]any
			must(t, json.Unmarshal(orig, &g))
			ms := g["attributes"].(map[string]any)["ome"].(map[string]any)["multiscales"].([]any)[0].(map[string]any)
			c.edit(ms)
			b, _ := json.Marshal(g)
			must(t, os.WriteFile(filepath.Join(root, "zarr.json"), b, 0o644))
			_, _, err := zspool(t, "verify", root)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("verify: %v, want a failure naming %q", err, c.want)
			}
		})
	}
	must(t, os.WriteFile(filepath.Join(root, "zarr.json"), orig, 0o644))
}

func axis(ms map[string]any, i int) map[string]any { return ms["axes"].([]any)[i].(map[string]any) }

func TestDimensionsOMECannotHoldGiveAPlainGroupOrARefusal(t *testing.T) {
	for _, c := range []struct {
		name    string
		ome     any
		wantErr string // "" : converts to a plain group with a warning
	}{
		{"ome auto writes a plain Zarr v3 group and warns", "auto", ""},
		{"ome true refuses, naming the rule", true, "ome: is true, but the dimensions cannot be an OME-NGFF image"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			a := newAcquisition("yxt", "uint8", []dimSpec{{6, 6, 1}, {5, 5, 1}, {3, 1, 1}})
			for d, n := range []string{"y", "x", "t"} {
				dims(a)[d]["name"] = n
			}
			a.manifest["ome"] = c.ome
			a.randomRaw(3, 6*5*3)
			out := filepath.Join(dir, "out")
			_, stderr, err := zspool(t, "convert", a.write(t, dir), "--dest", out, "--quiet")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "t is out of place") {
					t.Fatalf("convert: %v, want %q naming t", err, c.wantErr)
				}
				if _, serr := os.Stat(out); serr == nil {
					t.Fatal("a refused acquisition wrote something")
				}
				return
			}
			if err != nil {
				t.Fatalf("convert: %v\n%s", err, stderr)
			}
			if !strings.Contains(stderr, "plain Zarr v3 group") {
				t.Errorf("no warning:\n%s", stderr)
			}
			root := filepath.Join(out, "yxt.ome.zarr")
			b, _ := os.ReadFile(filepath.Join(root, "zarr.json"))
			if strings.Contains(string(b), `"ome"`) {
				t.Fatalf("a plain group carries OME metadata:\n%s", b)
			}
			if stdout, _, err := zspool(t, "verify", root, "--raw", filepath.Join(dir, "yxt.raw")); err != nil || !strings.Contains(stdout, "plain Zarr v3 group") {
				t.Fatalf("verify: %v %s", err, stdout)
			}
			checkWithZarrita(t, []interopCase{{Dataset: root, Level: 0, Raw: filepath.Join(dir, "yxt.raw")}})
		})
	}
}
