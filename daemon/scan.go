package daemon

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/zspool/zspool/pipeline"
)

// scan looks at every manifest in the spool: a complete, valid acquisition
// is queued once its files have held still for the settle time; bad input
// is failed at once; a raw file of the wrong size (or none yet) waits
// until its size has been stable for the settle time, then fails.
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
	claimed := d.claimedRaws()
	// owner: the first manifest (in arrival order) to name each raw file.
	// A later one naming the same file is bad input, but the file is the
	// first one's and stays where it is.
	owner := map[string]string{}
	seen := map[string]bool{}
	for _, name := range names {
		id := strings.TrimSuffix(name, ".json")
		seen[id] = true
		data := dataName(root, id, name)
		first, taken := owner[data]
		if data != "" && !taken {
			owner[data] = name
		}
		if d.isActive(id) {
			continue
		}
		if _, err := d.journal.Get(id); err == nil {
			continue // an earlier acquisition of the same name is still being worked on
		}
		if taken {
			d.clearWaiting(id)
			d.failSpool(id, name, false, &pipeline.InputError{Err: fmt.Errorf(
				"manifest %s names raw file %s, which manifest %s names too: one raw file feeds one acquisition, so the first keeps it and this manifest is set aside",
				name, data, first)})
			continue
		}
		d.consider(root, id, name, data, claimed[data])
	}
	d.mu.Lock()
	var oldest time.Time
	for id, p := range d.waiting {
		if !seen[id] {
			delete(d.waiting, id) // withdrawn by the acquisition software
			continue
		}
		if oldest.IsZero() || p.since.Before(oldest) {
			oldest = p.since
		}
	}
	d.m.waiting.Set(float64(len(d.waiting)))
	if oldest.IsZero() {
		d.m.oldestWait.Set(0)
	} else {
		d.m.oldestWait.Set(time.Since(oldest).Seconds())
	}
	d.mu.Unlock()
}

// claimedRaws maps each raw file name that a journaled job has claimed to
// that job, so a manifest whose raw file was taken can say by whom.
func (d *Daemon) claimedRaws() map[string]string {
	out := map[string]string{}
	jobs, err := d.journal.Jobs()
	if err != nil {
		return out
	}
	for _, j := range jobs {
		out[j.Data] = fmt.Sprintf("acquisition %s (manifest %s)", j.ID, j.Manifest)
	}
	return out
}

// consider judges one manifest; data is the raw file it names (as
// dataName reads it), claimedBy the job that holds a raw file of that
// name, if any.
func (d *Daemon) consider(root *os.Root, id, name, data, claimedBy string) {
	it, err := d.candidate(root, id, name)
	if err == nil {
		// Valid now, but the acquisition may still be writing (a raw file
		// whose first dimension is open is valid at every whole frame):
		// claimed only once it holds still.
		if !d.settled(root, id, name, data) {
			return
		}
		d.clearWaiting(id)
		if !d.busyName(it.name) { // else the same dataset is being written: wait for it
			d.enqueue(it)
		}
		return
	}
	if !pipeline.IsInputError(err) {
		d.log.Warn("spool: cannot look at an acquisition yet", zap.String("manifest", name), zap.Error(err))
		return
	}
	if isWaitable(err) && !d.settled(root, id, name, data) {
		return
	}
	if claimedBy != "" && isMissing(err) {
		err = &pipeline.InputError{Err: fmt.Errorf("%w; a raw file of that name was claimed by %s, and one raw file feeds one acquisition", err, claimedBy)}
	}
	d.clearWaiting(id)
	d.failSpool(id, name, true, err)
}

// candidate opens and plans an acquisition: the item to queue, or why it
// cannot be one (yet).
func (d *Daemon) candidate(root *os.Root, id, name string) (item, error) {
	src, err := pipeline.OpenSourceIn(root, d.opt.SpoolDir, name)
	if err != nil {
		return item{}, err
	}
	src.Close()
	if err := errors.Join(checkLinks(root, name), checkLinks(root, src.RawName)); err != nil {
		return item{}, err
	}
	if _, err := pipeline.NewPlan(src.Manifest, src.RawName, src.RawSize, pipeline.Options{MemoryBudget: 1 << 62}); err != nil {
		return item{}, err
	}
	return item{id: id, manifest: name, data: src.RawName, name: src.Manifest.Name}, nil
}

// fileState is what settling watches of a file: it must hold still.
type fileState struct {
	size  int64 // -1: no such file
	mtime time.Time
}

func statIn(root *os.Root, name string) fileState {
	if name == "" {
		return fileState{size: -1}
	}
	fi, err := root.Lstat(name)
	if err != nil {
		return fileState{size: -1}
	}
	return fileState{size: fi.Size(), mtime: fi.ModTime()}
}

// settled reports whether an acquisition's raw file and manifest have kept
// their size and mtime for the settle time; it starts or restarts the
// clock otherwise. With settle 0 the first look is enough.
func (d *Daemon) settled(root *os.Root, id, name, data string) bool {
	if d.opt.Settle <= 0 {
		return true
	}
	raw, man := statIn(root, data), statIn(root, name)
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.waiting[id]
	if !ok || p.raw != raw || p.manifest != man {
		d.waiting[id] = pending{raw: raw, manifest: man, since: now}
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
