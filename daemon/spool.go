package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/zspool/zspool/pipeline"
)

// ignored reports whether the spool must never pick up name: dotfiles and
// files still being written (.tmp, .part).
func ignored(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".part")
}

// manifests lists the candidate manifests in the spool, oldest first so
// acquisitions are served in arrival order.
func manifests(spool string) ([]string, error) {
	entries, err := os.ReadDir(spool)
	if err != nil {
		return nil, fmt.Errorf("spool %s: %w", spool, err)
	}
	type cand struct {
		name string
		mod  time.Time
	}
	var cs []cand
	for _, e := range entries {
		n := e.Name()
		if ignored(n) || !strings.HasSuffix(n, ".json") || e.IsDir() {
			continue
		}
		var mod time.Time
		if fi, err := e.Info(); err == nil {
			mod = fi.ModTime()
		}
		cs = append(cs, cand{n, mod})
	}
	for i := 1; i < len(cs); i++ { // few entries: insertion sort keeps it stable
		for k := i; k > 0 && cs[k].mod.Before(cs[k-1].mod); k-- {
			cs[k], cs[k-1] = cs[k-1], cs[k]
		}
	}
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out, nil
}

// checkLinks refuses a spool file that another name also points at: a
// hard link would let a released or failed file live on under the other
// name, or be changed behind the daemon's back.
func checkLinks(root *os.Root, name string) error {
	fi, err := root.Lstat(name)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink != 1 {
		return &pipeline.InputError{Err: fmt.Errorf("%s: has %d hard links; zspool takes only files with one", name, st.Nlink)}
	}
	return nil
}

// pending tracks acquisitions that are not ready to claim: files still
// changing, or a raw file that disagrees with the manifest (or is
// missing). They are rechecked until nothing has changed for the settle
// time, then claimed or failed.
type pending struct {
	raw, manifest fileState
	since         time.Time
}

// isWaitable reports input errors that may heal as the acquisition
// software keeps writing: a raw file of the wrong size, or none yet.
func isWaitable(err error) bool {
	var se *pipeline.SizeError
	return errors.As(err, &se) || isMissing(err)
}

// isMissing reports an input error that says a file does not exist.
func isMissing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "does not exist")
}

// moveInto renames name from one directory into another, fsyncing both so
// the move survives a crash. A file already at the destination (a move
// finished before a crash) is fine.
func moveInto(fromDir, toDir, name string) error {
	src, dst := filepath.Join(fromDir, name), filepath.Join(toDir, name)
	if err := os.Rename(src, dst); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Lstat(dst); serr == nil {
				return nil
			}
		}
		return err
	}
	if err := syncDir(fromDir); err != nil {
		return err
	}
	return syncDir(toDir)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// sameFilesystem refuses a state dir on another filesystem than the
// spool: claiming is a rename, which must be atomic.
func sameFilesystem(a, b string) error {
	var sa, sb syscall.Stat_t
	if err := syscall.Stat(a, &sa); err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	if err := syscall.Stat(b, &sb); err != nil {
		return fmt.Errorf("%s: %w", b, err)
	}
	if sa.Dev != sb.Dev {
		return fmt.Errorf("state_dir %s is on another filesystem than spool_dir %s: claiming renames files, which only works within one filesystem", b, a)
	}
	return nil
}
