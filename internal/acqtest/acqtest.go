// Package acqtest writes acquisitions for tests: a raw file and its
// manifest, side by side, as an instrument leaves them in the spool.
package acqtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Write puts raw into dir/acq.raw and manifest, as JSON, into
// dir/acq.json, and returns the manifest's path.
func Write(t testing.TB, dir string, manifest map[string]any, raw []byte) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "acq.raw"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "acq.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// OpenRaw writes data to path and opens it for reading, as an engine opens
// a raw file; the file is closed when the test ends.
func OpenRaw(t testing.TB, path string, data []byte) *os.File {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
