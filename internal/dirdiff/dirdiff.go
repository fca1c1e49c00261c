// Package dirdiff compares two directory trees file by file, for tests
// that hold two writers (engines, encoders) to the same bytes.
package dirdiff

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// Same reports how many files under want there are, or the first one
// that got lacks or holds different bytes for. Files only under got are
// not looked for: the callers compare trees of known layout.
func Same(want, got string) (int, error) {
	n := 0
	err := filepath.WalkDir(want, func(path string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		rel, err := filepath.Rel(want, path)
		if err != nil {
			return err
		}
		w, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		g, err := os.ReadFile(filepath.Join(got, rel))
		if err != nil {
			return err
		}
		if !bytes.Equal(g, w) {
			at := 0
			for at < min(len(g), len(w)) && g[at] == w[at] {
				at++
			}
			return fmt.Errorf("%s: %d bytes differ from the %d expected, first at byte %d", rel, len(g), len(w), at)
		}
		n++
		return nil
	})
	return n, err
}
