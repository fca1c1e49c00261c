package daemon

import (
	"errors"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/zspool/zspool/pipeline"
)

// scan looks at every manifest in the spool: a complete, valid acquisition
// is queued; bad input is failed at once; a raw file of the wrong size (or
// none yet) waits until its size has been stable for the settle time.
func (d *Daemon) scan() {
	names, err := manifests(d.opt.SpoolDir)
	if err != nil {
		d.log.Error("scan", zap.Error(err))
		return
	}
	root, err := os.OpenRoot(d.opt.SpoolDir)
	if err != nil {
		d.log.Error("scan", zap.Error(err))
		return
	}
	defer root.Close()
	seen := map[string]bool{}
	for _, name := range names {
		id := strings.TrimSuffix(name, ".json")
		seen[id] = true
		if d.isActive(id) {
			continue
		}
		if _, err := d.journal.Get(id); err == nil {
			continue // an earlier acquisition of the same name is still being worked on
		}
		d.consider(root, id, name)
	}
	d.mu.Lock()
	for id := range d.waiting {
		if !seen[id] {
			delete(d.waiting, id) // withdrawn by the acquisition software
		}
	}
	d.m.waiting.Set(float64(len(d.waiting)))
	d.mu.Unlock()
}

func (d *Daemon) consider(root *os.Root, id, name string) {
	src, err := pipeline.OpenSourceIn(root, d.opt.SpoolDir, name)
	if err == nil {
		data, dsName := src.RawName, src.Manifest.Name
		src.Close()
		if err = errors.Join(checkLinks(root, name), checkLinks(root, data)); err == nil {
			if _, err = pipeline.NewPlan(src.Manifest, data, src.RawSize, pipeline.Options{MemoryBudget: 1 << 62}); err == nil {
				d.clearWaiting(id)
				if d.busyName(dsName) {
					return // the same dataset is being written: wait for it
				}
				d.enqueue(item{id: id, manifest: name, data: data, name: dsName})
				return
			}
		}
	}
	if !pipeline.IsInputError(err) {
		d.log.Warn("spool: cannot look at an acquisition yet", zap.String("manifest", name), zap.Error(err))
		return
	}
	if isWaitable(err) && !d.settled(root, id, name) {
		return
	}
	d.clearWaiting(id)
	d.failSpool(id, name, err)
}

// settled reports whether an acquisition's raw file has kept one size for
// the settle time; it starts or restarts the clock otherwise.
func (d *Daemon) settled(root *os.Root, id, name string) bool {
	size := rawSize(root, dataName(root, id, name))
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.waiting[id]
	if !ok || p.size != size {
		d.waiting[id] = pending{size: size, since: now}
		d.m.waiting.Set(float64(len(d.waiting)))
		return false
	}
	return now.Sub(p.since) >= d.opt.Settle
}

func (d *Daemon) clearWaiting(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.waiting, id)
	d.m.waiting.Set(float64(len(d.waiting)))
}
