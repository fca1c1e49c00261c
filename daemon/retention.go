package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"
)

// enforceRetention bounds release.policy archive's directory: archived
// acquisitions are removed oldest first while they are older than
// ArchiveMaxAge, or while the archive holds more than ArchiveMaxBytes.
// Only what a release finished is ever removed: a directory a journaled
// job still names (a release in progress) is left alone, and nothing
// outside the archive directory is touched.
func (d *Daemon) enforceRetention(log *zap.Logger) {
	if d.opt.Release != "archive" || (d.opt.ArchiveMaxAge <= 0 && d.opt.ArchiveMaxBytes <= 0) {
		return
	}
	d.retentionMu.Lock()
	defer d.retentionMu.Unlock()
	entries, err := os.ReadDir(d.opt.ArchiveDir)
	if err != nil {
		log.Warn("archive retention: reading the archive", zap.Error(err))
		return
	}
	protected := map[string]bool{}
	if jobs, err := d.journal.Jobs(); err == nil {
		for _, j := range jobs {
			if j.Archive != "" {
				protected[filepath.Clean(j.Archive)] = true
			}
		}
	} else {
		log.Warn("archive retention: journal", zap.Error(err))
		return
	}
	type archived struct {
		path string
		when time.Time
		size int64
	}
	var all []archived
	var total int64
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(d.opt.ArchiveDir, e.Name())
		fi, err := e.Info()
		if err != nil {
			continue
		}
		a := archived{path: p, when: fi.ModTime(), size: dirSize(p)}
		all = append(all, a)
		total += a.size
	}
	slices.SortFunc(all, func(a, b archived) int { return a.when.Compare(b.when) })
	now := time.Now()
	for _, a := range all {
		old := d.opt.ArchiveMaxAge > 0 && now.Sub(a.when) > d.opt.ArchiveMaxAge
		big := d.opt.ArchiveMaxBytes > 0 && total > d.opt.ArchiveMaxBytes
		if !old && !big {
			break // the rest are younger, and the archive fits
		}
		if protected[a.path] {
			continue
		}
		if err := os.RemoveAll(a.path); err != nil {
			log.Warn("archive retention: removing", zap.String("dir", a.path), zap.Error(err))
			continue
		}
		total -= a.size
		reason := "archive_max_bytes"
		if old {
			reason = "archive_max_age"
		}
		log.Info("archive retention: removed an archived acquisition", zap.String("dir", a.path),
			zap.Int64("bytes", a.size), zap.Time("archived", a.when), zap.String("by", reason))
	}
}

// dirSize is the bytes of the regular files directly in dir.
func dirSize(dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}
