// Package localfs is the local-directory destination: the embedded default
// that needs no server, and the reference the S3 output is compared with.
// Objects become visible atomically (temp file, fsync, rename, directory
// fsync), and the same directory reads back as a zarr.Store.
package localfs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zarr"
)

// writeBuffer batches small chunks into fewer write calls; directWrite
// and larger writes are worth a call of their own.
const (
	writeBuffer = 1 << 20
	directWrite = 64 << 10
)

// Dir is a destination rooted at a local directory.
type Dir struct {
	root string
	mu   sync.Mutex
	made map[string]bool // directories known to exist durably
}

// New returns a destination at root; the directory is created on the first
// write, so a refused conversion leaves nothing behind.
func New(root string) *Dir {
	return &Dir{root: filepath.Clean(root), made: map[string]bool{}}
}

// Root is the destination directory.
func (d *Dir) Root() string { return d.root }

// Where names the file of a destination-relative key for messages.
func (d *Dir) Where(key string) string { return filepath.Join(d.root, filepath.FromSlash(key)) }

func (d *Dir) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "\\") {
		return "", fmt.Errorf("key %q: not a relative object key", key)
	}
	for _, part := range strings.Split(key, "/") {
		if part == "" || part == "." || part == ".." {
			return "", fmt.Errorf("key %q: empty, . or .. component", key)
		}
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// ensureDir creates dir and fsyncs every directory it had to create, and
// the parent of each, so the new entries survive a crash.
func (d *Dir) ensureDir(dir string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.made[dir] {
		return nil
	}
	var missing []string
	for p := dir; ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			break
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, p := range missing {
		if err := syncDir(filepath.Dir(p)); err != nil {
			return err
		}
	}
	d.made[dir] = true
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// Create starts an object as a temp file beside its final name.
func (d *Dir) Create(_ context.Context, key string) (pipeline.ObjectWriter, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(p)
	if err := d.ensureDir(dir); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(p)+".*.tmp")
	if err != nil {
		return nil, err
	}
	return &writer{f: f, bw: bufio.NewWriterSize(f, writeBuffer), final: p}, nil
}

type writer struct {
	f     *os.File
	bw    *bufio.Writer
	final string
}

// Write batches small writes; one of directWrite or more goes to the file
// as it is, after what is batched: copying it into the buffer first would
// be a second pass over every byte of a shard of large chunks.
func (w *writer) Write(p []byte) (int, error) {
	if len(p) < directWrite {
		return w.bw.Write(p)
	}
	if err := w.bw.Flush(); err != nil {
		return 0, err
	}
	return w.f.Write(p)
}

// Commit flushes, fsyncs, renames into place and fsyncs the directory.
func (w *writer) Commit() error {
	err := w.bw.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.f.Name(), w.final)
	}
	if err == nil {
		err = syncDir(filepath.Dir(w.final))
	}
	if err != nil {
		_ = os.Remove(w.f.Name())
		return fmt.Errorf("commit %s: %w", w.final, err)
	}
	return nil
}

// Abort removes the temp file.
func (w *writer) Abort() error {
	_ = w.f.Close()
	if err := os.Remove(w.f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Put writes a whole object atomically.
func (d *Dir) Put(ctx context.Context, key string, data []byte) error {
	w, err := d.Create(ctx, key)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		_ = w.Abort()
		return err
	}
	return w.Commit()
}

// Delete removes an object; a missing one is fine.
func (d *Dir) Delete(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return syncDir(filepath.Dir(p))
}

// Get reads a whole object.
func (d *Dir) Get(_ context.Context, key string) ([]byte, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", key, zarr.ErrNotFound)
	}
	return b, err
}

// GetRange reads n bytes at off.
func (d *Dir) GetRange(_ context.Context, key string, off, n int64) ([]byte, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", key, zarr.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Check the range before allocating: a negative n panics in make, and a
	// huge one must not allocate before the read finds the end.
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if off < 0 || n < 0 || off > fi.Size() || n > fi.Size()-off {
		return nil, fmt.Errorf("%s: range [%d, +%d) outside the object's %d bytes", key, off, n, fi.Size())
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: range [%d, +%d) past the end", key, off, n)
		}
		return nil, err
	}
	return b, nil
}

// Size is the object's length.
func (d *Dir) Size(_ context.Context, key string) (int64, error) {
	p, err := d.path(key)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("%s: %w", key, zarr.ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// RemoveAll removes everything under a key prefix (a dataset root).
func (d *Dir) RemoveAll(_ context.Context, prefix string) error {
	p, err := d.path(prefix)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(p); err != nil {
		return err
	}
	d.mu.Lock()
	for dir := range d.made {
		if dir == p || strings.HasPrefix(dir, p+string(filepath.Separator)) {
			delete(d.made, dir)
		}
	}
	d.mu.Unlock()
	if err := syncDir(filepath.Dir(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// Nothing was there: nothing to make durable.
	return nil
}
