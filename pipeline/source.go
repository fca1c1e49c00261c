package pipeline

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/zspool/zspool/config"
)

// maxManifestBytes bounds what is read of a manifest: real ones are a few
// KiB, and a runaway file must not be slurped.
const maxManifestBytes = 1 << 20

// Source is an opened acquisition: its validated manifest and its raw file,
// opened without following symlinks.
type Source struct {
	Dir          string
	ManifestName string
	Manifest     *config.Manifest
	Raw          *os.File
	RawName      string
	RawSize      int64
}

// Close releases the raw file.
func (s *Source) Close() error { return s.Raw.Close() }

// ManifestFor returns the manifest path of a raw file or manifest argument:
// a `.json` path is the manifest; otherwise `<stem>.json` beside the file.
func ManifestFor(path string) string {
	if strings.HasSuffix(path, ".json") {
		return path
	}
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".json"
}

// OpenSource reads and validates the manifest at manifestPath and opens its
// raw file. Everything the manifest says is checked here, before any byte
// of data is processed; every failure about the input is an InputError
// naming the file or the field.
func OpenSource(manifestPath string) (*Source, error) {
	dir, name := filepath.Split(manifestPath)
	if dir == "" {
		dir = "."
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("spool directory %s: %w", dir, err)
	}
	defer root.Close()
	return OpenSourceIn(root, dir, name)
}

// OpenSourceIn is OpenSource inside an already opened root, as the daemon
// holds one on its spool or state directory.
func OpenSourceIn(root *os.Root, dir, manifestName string) (*Source, error) {
	data, err := ReadManifest(root, manifestName)
	if err != nil {
		return nil, err
	}
	stem := strings.TrimSuffix(manifestName, ".json")
	m, err := config.ParseManifest(data, stem)
	if err != nil {
		return nil, badInput(fmt.Errorf("manifest %s: %w", manifestName, err))
	}
	raw, size, err := openRegular(root, "data file", m.Data)
	if err != nil {
		return nil, err
	}
	return &Source{Dir: dir, ManifestName: manifestName, Manifest: m, Raw: raw, RawName: m.Data, RawSize: size}, nil
}

// openRegular opens name inside root for reading, refusing symlinks (also
// ones swapped in between the check and the open) and anything that is not
// a regular file.
func openRegular(root *os.Root, what, name string) (*os.File, int64, error) {
	fi, err := root.Lstat(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, badInput(fmt.Errorf("%s %s: does not exist", what, name))
		}
		return nil, 0, fmt.Errorf("%s %s: %w", what, name, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, 0, badInput(fmt.Errorf("%s %s: is a symlink, which zspool refuses", what, name))
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, badInput(fmt.Errorf("%s %s: is not a regular file (%s)", what, name, fi.Mode().Type()))
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, 0, badInput(fmt.Errorf("%s %s: is a symlink, which zspool refuses", what, name))
		}
		return nil, 0, fmt.Errorf("%s %s: %w", what, name, err)
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("%s %s: %w", what, name, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, badInput(fmt.Errorf("%s %s: is not a regular file (%s)", what, name, fi.Mode().Type()))
	}
	return f, fi.Size(), nil
}

// ReadManifest reads a manifest inside root without ever blocking: a FIFO,
// a device or a symlink is refused before a byte is read, so a spool that
// holds one cannot stall whoever looks at it.
func ReadManifest(root *os.Root, name string) ([]byte, error) {
	return readRegular(root, name, maxManifestBytes)
}

func readRegular(root *os.Root, name string, limit int64) ([]byte, error) {
	f, size, err := openRegular(root, "manifest", name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > limit {
		return nil, badInput(fmt.Errorf("manifest %s: %d bytes is larger than the %d allowed", name, size, limit))
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", name, err)
	}
	return b, nil
}
