package localfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zarr"
)

// The destination is used both ways: as the pipeline's sink and as the
// reader's store.
var (
	_ pipeline.Sink = (*localfs.Dir)(nil)
	_ zarr.Store    = (*localfs.Dir)(nil)
)

// newDir returns a destination whose root does not exist yet.
func newDir(t *testing.T) *localfs.Dir {
	t.Helper()
	return localfs.New(filepath.Join(t.TempDir(), "dest"))
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func TestCreatedObjectsBecomeVisibleOnlyAtCommit(t *testing.T) {
	d := newDir(t)
	ctx := t.Context()
	const key = "acq.ome.zarr/0/c/1/2/3"
	final := filepath.Join(d.Root(), "acq.ome.zarr", "0", "c", "1", "2", "3")
	w, err := d.Create(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	data := pattern(3<<20 + 17) // more than the write buffer
	for part := range slices.Chunk(data, 1<<19+3) {
		if _, err := w.Write(part); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Lstat(final); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("before Commit: stat of the final path: %v, want not-exist", err)
	}
	if _, err := d.Get(ctx, key); !errors.Is(err, zarr.ErrNotFound) {
		t.Fatalf("before Commit: Get: %v, want ErrNotFound", err)
	}
	if _, err := d.Size(ctx, key); !errors.Is(err, zarr.ErrNotFound) {
		t.Fatalf("before Commit: Size: %v, want ErrNotFound", err)
	}
	inDir := names(t, filepath.Dir(final))
	if len(inDir) != 1 || !strings.HasPrefix(inDir[0], ".") || !strings.HasSuffix(inDir[0], ".tmp") {
		t.Fatalf("before Commit the directory holds %q, want one dotfile ending in .tmp", inDir)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, filepath.Dir(final)); !slices.Equal(got, []string{"3"}) {
		t.Fatalf("after Commit the directory holds %q, want only the object", got)
	}
	got, err := d.Get(ctx, key)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after Commit: Get gave %d bytes (err %v), want the %d written", len(got), err, len(data))
	}
}

func TestAbortLeavesNoFile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write int
	}{
		{"nothing written", 0},
		{"a little written", 100},
		{"more than the write buffer written", 2<<20 + 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDir(t)
			w, err := d.Create(t.Context(), "a/b/obj")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(pattern(tc.write)); err != nil {
				t.Fatal(err)
			}
			if err := w.Abort(); err != nil {
				t.Fatalf("Abort: %v", err)
			}
			if err := w.Abort(); err != nil {
				t.Fatalf("a second Abort: %v", err)
			}
			if got := names(t, filepath.Join(d.Root(), "a", "b")); len(got) != 0 {
				t.Fatalf("after Abort the directory holds %q", got)
			}
			if _, err := d.Get(t.Context(), "a/b/obj"); !errors.Is(err, zarr.ErrNotFound) {
				t.Fatalf("Get after Abort: %v, want ErrNotFound", err)
			}
		})
	}
}

func TestAFailedCommitRemovesItsTempFileAndAbortIsStillSafe(t *testing.T) {
	d := newDir(t)
	// The final name is taken by a non-empty directory: the rename fails.
	blocker := filepath.Join(d.Root(), "a", "obj", "inside")
	if err := os.MkdirAll(blocker, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := d.Create(t.Context(), "a/obj")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("data")); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err == nil || !strings.Contains(err.Error(), "commit") {
		t.Fatalf("Commit over a directory: %v, want an error", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort after a failed Commit: %v", err)
	}
	if got := names(t, filepath.Join(d.Root(), "a")); !slices.Equal(got, []string{"obj"}) {
		t.Fatalf("directory holds %q, want only the blocking directory", got)
	}
}

func TestPutGetGetRangeAndSizeRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 4096, 1<<20 + 1} {
		t.Run(fmt.Sprint(n, " bytes"), func(t *testing.T) {
			d := newDir(t)
			ctx := t.Context()
			data := pattern(n)
			const key = "ds.ome.zarr/0/zarr.json"
			if err := d.Put(ctx, key, data); err != nil {
				t.Fatal(err)
			}
			got, err := d.Get(ctx, key)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("Get: %d bytes, err %v", len(got), err)
			}
			size, err := d.Size(ctx, key)
			if err != nil || size != int64(n) {
				t.Fatalf("Size = %d, %v; want %d", size, err, n)
			}
			for _, r := range [][2]int64{{0, int64(n)}, {0, int64(n / 2)}, {int64(n / 3), int64(n / 3)}, {int64(n) - int64(n/4), int64(n / 4)}, {int64(n), 0}} {
				got, err := d.GetRange(ctx, key, r[0], r[1])
				if err != nil || !bytes.Equal(got, data[r[0]:r[0]+r[1]]) {
					t.Fatalf("GetRange(%d, %d): %d bytes, err %v", r[0], r[1], len(got), err)
				}
			}
			if _, err := d.GetRange(ctx, key, int64(n)-1, 2); err == nil {
				t.Fatal("GetRange past the end succeeded")
			}
			if _, err := d.GetRange(ctx, key, int64(n)+1, 1); err == nil {
				t.Fatal("GetRange after the end succeeded")
			}
		})
	}
}

func TestGetRangeRefusesNegativeOffsetsAndLengths(t *testing.T) {
	d := newDir(t)
	if err := d.Put(t.Context(), "obj", pattern(10)); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int64{{-1, 2}, {0, -1}, {5, -5}} {
		if b, err := d.GetRange(t.Context(), "obj", r[0], r[1]); err == nil {
			t.Errorf("GetRange(%d, %d) = %d bytes, want an error", r[0], r[1], len(b))
		}
	}
}

func TestPutReplacesAnExistingObjectWhole(t *testing.T) {
	d := newDir(t)
	ctx := t.Context()
	if err := d.Put(ctx, "k", pattern(1000)); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, "k", []byte("short")); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Get(ctx, "k"); err != nil || string(got) != "short" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if got := names(t, d.Root()); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("root holds %q, want only k", got)
	}
}

func TestReadsOfAMissingKeyWrapErrNotFound(t *testing.T) {
	d := newDir(t)
	ctx := t.Context()
	check := func(when string) {
		t.Helper()
		if _, err := d.Get(ctx, "a/missing"); !errors.Is(err, zarr.ErrNotFound) {
			t.Errorf("%s: Get: %v", when, err)
		}
		if _, err := d.GetRange(ctx, "a/missing", 0, 1); !errors.Is(err, zarr.ErrNotFound) {
			t.Errorf("%s: GetRange: %v", when, err)
		}
		if _, err := d.Size(ctx, "a/missing"); !errors.Is(err, zarr.ErrNotFound) {
			t.Errorf("%s: Size: %v", when, err)
		}
	}
	check("without a root directory")
	if err := d.Put(ctx, "a/present", []byte("x")); err != nil {
		t.Fatal(err)
	}
	check("beside another object")
}

func TestKeysThatAreNotCleanRelativePathsAreRefused(t *testing.T) {
	d := newDir(t)
	ctx := t.Context()
	for _, key := range []string{
		"", "/abs", "/", "..", "../escape", "a/../../escape", "a/..", "a//b", "a/", "//a",
		".", "./a", "a/./b", `a\b`, `..\escape`,
	} {
		t.Run(fmt.Sprintf("%q", key), func(t *testing.T) {
			if _, err := d.Create(ctx, key); err == nil {
				t.Error("Create accepted it")
			}
			if err := d.Put(ctx, key, []byte("x")); err == nil {
				t.Error("Put accepted it")
			}
			if _, err := d.Get(ctx, key); err == nil || errors.Is(err, zarr.ErrNotFound) {
				t.Errorf("Get: %v, want a refusal", err)
			}
			if _, err := d.GetRange(ctx, key, 0, 1); err == nil || errors.Is(err, zarr.ErrNotFound) {
				t.Errorf("GetRange: %v, want a refusal", err)
			}
			if _, err := d.Size(ctx, key); err == nil || errors.Is(err, zarr.ErrNotFound) {
				t.Errorf("Size: %v, want a refusal", err)
			}
			if err := d.Delete(ctx, key); err == nil {
				t.Error("Delete accepted it")
			}
		})
	}
	if _, err := os.Stat(d.Root()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("refused keys left the root behind: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(d.Root()), "escape")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused key escaped the root: %v", err)
	}
}

func TestDeleteRemovesAnObjectAndIgnoresAMissingOne(t *testing.T) {
	d := newDir(t)
	ctx := t.Context()
	if err := d.Delete(ctx, "a/b/never"); err != nil {
		t.Fatalf("Delete without a root: %v", err)
	}
	if err := d.Put(ctx, "a/b/obj", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, "a/b/never"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
	if err := d.Delete(ctx, "a/b/obj"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctx, "a/b/obj"); !errors.Is(err, zarr.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if err := d.Delete(ctx, "a/b/obj"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
}

func TestNewCreatesTheRootOnlyAtTheFirstWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(d *localfs.Dir) error
	}{
		{"Put", func(d *localfs.Dir) error { return d.Put(t.Context(), "x/y", []byte("1")) }},
		{"Create", func(d *localfs.Dir) error {
			w, err := d.Create(t.Context(), "x/y")
			if err != nil {
				return err
			}
			return w.Abort()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			rootPath := filepath.Join(parent, "deep", "dest")
			d := localfs.New(rootPath + "/./")
			if d.Root() != rootPath {
				t.Errorf("Root = %q, want the cleaned %q", d.Root(), rootPath)
			}
			_, _ = d.Get(t.Context(), "x/y")
			_, _ = d.Size(t.Context(), "x/y")
			_ = d.Delete(t.Context(), "x/y")
			if got := names(t, parent); len(got) != 0 {
				t.Fatalf("before any write the parent holds %q", got)
			}
			if err := tc.write(d); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(filepath.Join(rootPath, "x")); err != nil || !fi.IsDir() {
				t.Fatalf("after the first write: %v", err)
			}
		})
	}
}

func TestConcurrentWritersShareNewDirectories(t *testing.T) {
	d := newDir(t)
	ctx := t.Context()
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			key := fmt.Sprintf("ds/0/c/%d/%d", i%2, i)
			w, err := d.Create(ctx, key)
			if err == nil {
				_, err = w.Write(pattern(100 + i))
			}
			if err == nil {
				err = w.Commit()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
		got, err := d.Get(ctx, fmt.Sprintf("ds/0/c/%d/%d", i%2, i))
		if err != nil || !bytes.Equal(got, pattern(100+i)) {
			t.Fatalf("object %d: %d bytes, %v", i, len(got), err)
		}
	}
}

func TestSmallAndLargeWritesLandInOrder(t *testing.T) {
	d := newDir(t)
	ctx := t.Context()
	data := pattern(4<<20 + 101)
	// Sizes on both sides of the direct-write threshold, small ones left
	// in the buffer before a large one.
	sizes := []int{10, 70000, 5, 1 << 20, 3, 64 << 10, 64<<10 - 1, 1<<20 + 7, 200}
	w, err := d.Create(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for i := 0; off < len(data); i++ {
		n := min(sizes[i%len(sizes)], len(data)-off)
		if _, err := w.Write(data[off : off+n]); err != nil {
			t.Fatal(err)
		}
		off += n
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Get(ctx, "obj"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get gave %d bytes (err %v) that differ from the %d written in order", len(got), err, len(data))
	}
}
