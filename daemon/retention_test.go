package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/zspool/zspool/destination"
)

func TestArchiveRetentionRemovesTheOldestFirstAndNeverAReleaseInProgress(t *testing.T) {
	h := newHarness(t, destination.Config{}, func(o *Options) { o.ArchiveMaxBytes = 2500 })
	d, err := New(context.Background(), zaptest.NewLogger(t), h.opt)
	must(t, err)
	defer d.journal.Close()
	archive := filepath.Join(h.opt.StateDir, "archive")
	now := time.Now()
	// Five archived acquisitions of 1000 bytes, a day apart; the oldest is
	// still being released (a journaled job names it).
	for i, id := range []string{"a0", "a1", "a2", "a3", "a4"} {
		dir := filepath.Join(archive, id)
		must(t, os.MkdirAll(dir, 0o750))
		must(t, os.WriteFile(filepath.Join(dir, id+".raw"), make([]byte, 1000), 0o640))
		when := now.Add(-time.Duration(5-i) * 24 * time.Hour)
		must(t, os.Chtimes(dir, when, when))
	}
	must(t, d.journal.Put(&Job{ID: "a0", State: StateStored, Name: "a0", Archive: filepath.Join(archive, "a0")}))
	d.enforceRetention(d.log)
	var left []string
	entries, _ := os.ReadDir(archive)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	// 5000 bytes, bound 2500: a1, a2 and a3 go (oldest first, a0 kept
	// although oldest), leaving a0 and a4.
	if want := "[a0 a4]"; fmtList(left) != want {
		t.Fatalf("archive holds %v, want %s", left, want)
	}

	d.opt.ArchiveMaxBytes, d.opt.ArchiveMaxAge = 0, 12*time.Hour
	must(t, d.journal.Delete("a0"))
	d.enforceRetention(d.log)
	entries, _ = os.ReadDir(archive)
	if len(entries) != 0 {
		t.Fatalf("entries older than the max age are left: %v", entries)
	}
}

func fmtList(s []string) string {
	out := "["
	for i, v := range s {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out + "]"
}
