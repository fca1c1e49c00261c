package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zspool/zspool/zarr"

	"github.com/zspool/zspool/pipeline"
)

// acquisition is a test input: a manifest (as a generic map, so tests can
// break any field) and the raw bytes beside it.
type acquisition struct {
	name     string
	manifest map[string]any
	raw      []byte
}

type dimSpec struct {
	size, chunk, shard int64
}

func newAcquisition(name, dtype string, dims []dimSpec) *acquisition {
	ds := make([]map[string]any, len(dims))
	for i, d := range dims {
		ds[i] = map[string]any{"name": string(rune('a' + i)), "size": d.size, "chunk": d.chunk, "shard": d.shard}
	}
	return &acquisition{name: name, manifest: map[string]any{
		"version": 1, "dtype": dtype, "dimensions": ds,
	}}
}

// randomRaw fills the acquisition with seeded random elements. Floats get
// finite values: NaN payloads are not guaranteed to survive every reader.
func (a *acquisition) randomRaw(seed uint64, elems int64) {
	dt := a.manifest["dtype"].(string)
	big := a.manifest["byte_order"] == "big"
	var order binary.ByteOrder = binary.LittleEndian
	if big {
		order = binary.BigEndian
	}
	size := zarr.DType(dt).Size()
	rng := rand.New(rand.NewPCG(seed, 1))
	a.raw = make([]byte, elems*int64(size))
	for i := int64(0); i < elems; i++ {
		p := a.raw[i*int64(size):]
		switch dt {
		case "float32":
			order.PutUint32(p, math.Float32bits(float32(rng.NormFloat64()*1000)))
		case "float64":
			order.PutUint64(p, math.Float64bits(rng.NormFloat64()*1e6))
		default:
			v := rng.Uint64()
			if rng.IntN(4) == 0 {
				v = 0 // runs of fill make some chunks absent
			}
			pipeline.StoreUint(order, p, size, v)
		}
	}
}

// write puts the raw file and the manifest into dir; it returns the
// manifest's path.
func (a *acquisition) write(t *testing.T, dir string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, a.name+".raw"), a.raw, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(a.manifest)
	if err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(dir, a.name+".json")
	if err := os.WriteFile(mp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return mp
}

// zspool runs a command in-process and returns stdout, stderr and error.
func zspool(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

// interopCase is one dataset for the zarrita check.
type interopCase struct {
	Dataset string `json:"dataset"`
	Raw     string `json:"raw,omitempty"`
	Level   int    `json:"level"`
}

// checkWithZarrita reads every case back through zarrita.js (interop/),
// the independent reader. Without its node_modules the check is skipped,
// unless ZSPOOL_REQUIRE_INTEROP=1 (make test and CI set it) makes that a
// failure.
func checkWithZarrita(t *testing.T, cases []interopCase) {
	t.Helper()
	root, err := filepath.Abs("../../interop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "zarrita")); err != nil {
		if os.Getenv("ZSPOOL_REQUIRE_INTEROP") == "1" {
			t.Fatalf("zarrita is not installed (npm ci --prefix interop): %v", err)
		}
		t.Skip("zarrita check skipped: run `npm ci --prefix interop` (make test does)")
	}
	// Every dataset an interop test writes must also pass OME-NGFF 0.5's
	// strict schema and the spec's rules beside it (a plain group, which
	// has no OME, has nothing to pass).
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.Dataset] {
			continue
		}
		seen[c.Dataset] = true
		var g zarr.GroupMetadata
		b, err := os.ReadFile(filepath.Join(c.Dataset, "zarr.json"))
		if err == nil {
			err = json.Unmarshal(b, &g)
		}
		if err != nil {
			t.Fatalf("%s: group zarr.json: %v", c.Dataset, err)
		}
		if _, ok := g.Attributes["ome"]; ok {
			if err := zarr.CheckOMEAttributes(g.Attributes); err != nil {
				t.Fatalf("%s: %v", c.Dataset, err)
			}
		}
	}
	spec := filepath.Join(t.TempDir(), "spec.json")
	b, _ := json.Marshal(cases)
	if err := os.WriteFile(spec, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", filepath.Join(root, "check.mjs"), spec).CombinedOutput()
	if err != nil {
		t.Fatalf("zarrita check failed: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "\nok ") + boolInt(strings.HasPrefix(string(out), "ok ")); n != len(cases) {
		t.Fatalf("zarrita checked %d of %d datasets:\n%s", n, len(cases), out)
	}
	t.Logf("zarrita:\n%s", out)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
