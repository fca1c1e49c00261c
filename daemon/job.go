package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/engine"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zarr"
)

// errStopping ends a conversion at a shard-layer boundary on shutdown.
var errStopping = errors.New("daemon stopping")

// run takes one item through its life: claim, convert (retrying transient
// faults with capped exponential backoff), confirm every object is stored,
// release. Bad input goes to failed/ instead.
func (d *Daemon) run(ctx, jobCtx context.Context, it item) {
	log := d.log.With(zap.String("job", it.id), zap.String("dataset", it.name))
	if !it.recovered {
		if err := d.claim(log, it); err != nil {
			log.Warn("not claimed; whatever was moved is back in the spool", zap.Error(err))
			return
		}
	}
	backoff := d.opt.JobBackoff
	for {
		job, err := d.journal.Get(it.id)
		if err != nil {
			log.Error("journal", zap.Error(err))
			return
		}
		switch job.State {
		case StateProcessing:
			job, err = d.settle(jobCtx, log, job)
			if err == nil {
				err = d.checkDest(jobCtx, job)
			}
			if err == nil {
				err = d.convert(jobCtx, log, job)
			}
			if err == nil {
				err = d.confirmStored(jobCtx, job)
			}
			if err == nil {
				_, err = d.journal.Update(job.ID, func(j *Job) { j.State = StateStored })
			}
		case StateStored:
			// No upload of this dataset may outlive the job.
			err = d.sweepDataset(jobCtx, job.Name)
			if err == nil {
				err = d.release(log, job)
			}
			if err == nil {
				return
			}
		default:
			err = fmt.Errorf("job in state %q cannot run", job.State)
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, errStopping) || (ctx.Err() != nil && jobCtx.Err() != nil):
			log.Info("stopped at a shard-layer boundary; the journal resumes it", zap.Int64("layers_done", job.LayersDone))
			return
		case pipeline.IsInputError(err):
			d.failJob(jobCtx, log, job, err)
			return
		}
		// Anything else is taken as transient (destination down, disk
		// full, …): retried, never quarantined. The attempt's uploads
		// are aborted first: the retry starts each shard afresh, and an
		// upload it would not know of must not stay on the bucket.
		d.m.jobRetries.Inc()
		_, _ = d.journal.Update(job.ID, func(j *Job) { j.Attempts++; j.LastError = err.Error() })
		log.Warn("transient fault: retrying", zap.Error(err), zap.Duration("in", backoff), zap.Int("attempt", job.Attempts+1))
		// Sealed shards are finished first: the sweep would abort them.
		if job, err = d.journal.Get(it.id); err == nil {
			_, err = d.settle(jobCtx, log, job)
		}
		if err != nil {
			log.Warn("sealed shards not finished yet; the dataset's uploads are swept later", zap.Error(err))
		} else if serr := d.sweepDataset(jobCtx, job.Name); serr != nil {
			log.Warn("uploads of the failed attempt not aborted yet; retried before release", zap.Error(serr))
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, d.opt.JobMaxBackoff)
	}
}

// claim moves the manifest and raw file into the job's state directory.
// The journal says "claiming" first, so a crash midway is finished (or
// undone) on the next start rather than losing track of a half-moved
// acquisition. A claim that cannot finish (the acquisition was withdrawn,
// or another manifest took its raw file) is undone: the files that were
// moved go back to the spool and the job is forgotten.
func (d *Daemon) claim(log *zap.Logger, it item) error {
	job := &Job{ID: it.id, State: StateClaiming, Manifest: it.manifest, Data: it.data, Name: it.name, Created: time.Now().UTC()}
	if err := d.journal.Put(job); err != nil {
		return err
	}
	if err := d.finishClaim(job); err != nil {
		d.undoClaim(log, job, err)
		return err
	}
	return nil
}

func (d *Daemon) finishClaim(job *Job) error {
	dir := filepath.Join(d.jobsDir, job.ID)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	// Raw first, manifest last: the manifest's presence in the spool is
	// what marks an acquisition as complete and unclaimed.
	for _, f := range []string{job.Data, job.Manifest} {
		if err := moveInto(d.opt.SpoolDir, dir, f); err != nil {
			return fmt.Errorf("claim %s: %w", f, err)
		}
	}
	fi, err := os.Lstat(filepath.Join(dir, job.Data))
	if err != nil {
		return fmt.Errorf("claim %s: %w", job.Data, err)
	}
	_, err = d.journal.Update(job.ID, func(j *Job) {
		j.State, j.RawSize, j.RawModTime = StateProcessing, fi.Size(), fi.ModTime().UTC()
	})
	return err
}

// undoClaim puts a half-claimed job's files back in the spool and forgets
// it, so the next scan judges the acquisition afresh. Where a file cannot
// go back (the spool has a new file of that name), the job's files go to
// failed/ with the reason instead; nothing is deleted either way.
func (d *Daemon) undoClaim(log *zap.Logger, job *Job, cause error) {
	dir := filepath.Join(d.jobsDir, job.ID)
	var errs []error
	for _, f := range []string{job.Manifest, job.Data} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err != nil {
			continue
		}
		if _, err := os.Lstat(filepath.Join(d.opt.SpoolDir, f)); err == nil {
			errs = append(errs, fmt.Errorf("%s: a new file of that name is in the spool", f))
			continue
		}
		if err := moveInto(dir, d.opt.SpoolDir, f); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		d.failJob(context.Background(), log, job, fmt.Errorf("claim could not finish (%v) nor be undone (%v)", cause, err))
		return
	}
	_ = os.Remove(dir)
	if err := d.journal.Delete(job.ID); err != nil {
		log.Error("journal: forgetting an undone claim", zap.Error(err))
	}
	log.Warn("claim undone: the acquisition changed under it (withdrawn, or its raw file taken)", zap.String("reason", cause.Error()))
}

// convert runs (or resumes) the conversion of a claimed job.
func (d *Daemon) convert(ctx context.Context, log *zap.Logger, job *Job) error {
	dir := filepath.Join(d.jobsDir, job.ID)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	src, err := pipeline.OpenSourceIn(root, dir, job.Manifest)
	if err != nil {
		return err
	}
	defer src.Close()
	opts := pipeline.Options{MemoryBudget: d.opt.MemoryBudget / int64(d.opt.ConcurrentJobs),
		ZstdEncoder: d.opt.ZstdEncoder, ZstdChecksum: d.opt.ZstdChecksum, GPU: d.opt.GPU}
	kind := d.opt.Engine
	if kind == "" {
		kind = engine.CPU
	}
	var layers int64
	res, err := engine.Convert(ctx, log, src, d.dest, engine.Run{
		Kind: kind, Options: opts, New: d.opt.NewEngine, Devices: d.opt.Devices,
		Convert: pipeline.ConvertOptions{
			Version: d.opt.Version,
			LayerDone: func(resume int64) error {
				if _, err := d.journal.Update(job.ID, func(j *Job) { j.LayersDone = resume }); err != nil {
					return fmt.Errorf("journal: %w", err)
				}
				d.m.layers.Inc()
				log.Debug("shard layer stored", zap.Int64("layer", resume-1))
				if d.stopping.Load() && resume < layers {
					return errStopping
				}
				return nil
			},
			Sealed:    func(objs []pipeline.SealedObject) error { return d.recordSealed(job.ID, objs) },
			Committed: func(objs []pipeline.SealedObject) { d.dropSealed(log, job.ID, objs) },
		},
		Ready: func(plan *pipeline.Plan, _ pipeline.Engine, co *pipeline.ConvertOptions) error {
			layers = plan.ShardLayers()
			if job.Layers != layers {
				if _, err := d.journal.Update(job.ID, func(j *Job) { j.Layers = layers }); err != nil {
					return fmt.Errorf("journal: %w", err)
				}
			}
			co.FirstLayer = min(job.LayersDone, layers)
			if co.FirstLayer > 0 {
				log.Info("job resumed", zap.Int64("layer", co.FirstLayer), zap.Int64("layers", layers))
			} else {
				log.Info("job started", zap.Int64("bytes", src.RawSize), zap.Int64("layers", layers))
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	d.m.bytesIn.Add(float64(res.BytesIn))
	d.m.bytesOut.Add(float64(res.BytesOut))
	if _, err := d.journal.Update(job.ID, func(j *Job) {
		// A resumed job adds to what the runs before it did.
		j.BytesIn += res.BytesIn
		j.BytesOut += res.BytesOut
		j.Seconds += res.Elapsed.Seconds()
	}); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	for _, s := range res.Stages {
		d.m.stage.WithLabelValues(s.Name).Add(s.Busy.Seconds())
	}
	secs := res.Elapsed.Seconds()
	log.Info("job converted", zap.Int64("bytes_in", res.BytesIn), zap.Int64("bytes_out", res.BytesOut),
		zap.Float64("ratio", res.Ratio()), zap.Float64("seconds", secs),
		zap.Float64("gib_per_s", float64(res.BytesIn)/(1<<30)/max(secs, 1e-9)))
	return nil
}

// confirmStored proves every object of the dataset is in the destination
// (HeadObject on S3) — each shard of each level, each array document, and
// the group document written last — before the raw file may go.
func (d *Daemon) confirmStored(ctx context.Context, job *Job) error {
	ds, err := zarr.Open(ctx, d.dest, pipeline.DatasetRoot(job.Name))
	if err != nil {
		return fmt.Errorf("stored check: %w", err)
	}
	if !ds.Plain {
		// Stored, but not what a viewer accepts: keep the raw file (the
		// job fails with the rule) rather than release it.
		if err := zarr.CheckOMEAttributes(ds.Group.Attributes); err != nil {
			return &pipeline.InputError{Err: fmt.Errorf("stored check: %w", err)}
		}
	}
	// One HeadObject per shard, many at once: one after another they cost
	// a round trip each (2 s for 128 shards on a local server).
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(confirmConcurrency)
	var n int
	for _, a := range ds.Levels {
		extent := make([]int64, a.Grid.Rank())
		for k := range extent {
			extent[k] = a.Grid.Shards(k)
		}
		_ = zarr.ForEach(extent, func(gc []int64) error {
			n++
			key := a.ShardKey(gc)
			g.Go(func() error {
				if _, err := d.dest.Size(gctx, key); err != nil {
					return fmt.Errorf("stored check: %w", err)
				}
				return nil
			})
			return gctx.Err()
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	d.log.Debug("every object stored", zap.String("job", job.ID), zap.Int("shards", n))
	return nil
}

// confirmConcurrency bounds the HeadObjects of confirmStored in flight.
const confirmConcurrency = 32

// release archives or deletes the raw file and manifest, then forgets the
// job. Each step tolerates having been done before a crash. A raw file
// that no longer has the size and mtime it was claimed with (still being
// written to after the claim) is not released: the job fails and the
// file is kept, since its new bytes are in no stored dataset.
func (d *Daemon) release(log *zap.Logger, job *Job) error {
	dir := filepath.Join(d.jobsDir, job.ID)
	if err := d.checkRawUnchanged(dir, job); err != nil {
		return err
	}
	if d.opt.Release == "delete" {
		for _, f := range []string{job.Data, job.Manifest} {
			if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	} else {
		to := job.Archive
		if to == "" {
			var err error
			if to, err = freeName(d.opt.ArchiveDir, job.ID); err != nil {
				return err
			}
			// Journaled before the directory is made, so a release redone
			// after a crash uses the same one and never leaves an empty
			// directory behind.
			if _, err := d.journal.Update(job.ID, func(j *Job) { j.Archive = to }); err != nil {
				return fmt.Errorf("journal: %w", err)
			}
		}
		if err := os.MkdirAll(to, 0o750); err != nil {
			return err
		}
		for _, f := range []string{job.Data, job.Manifest} {
			if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
				if err := moveInto(dir, to, f); err != nil {
					return err
				}
			}
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := d.journal.Delete(job.ID); err != nil {
		return err
	}
	d.m.jobs.WithLabelValues("stored").Inc()
	d.m.duration.Observe(time.Since(job.Created).Seconds())
	d.m.lastSuccess.SetToCurrentTime()
	o := d.outcome("stored", job)
	log.Info("job stored", zap.String("uri", o.URI), zap.Int64("bytes_in", o.BytesIn), zap.Int64("bytes_out", o.BytesOut),
		zap.Float64("ratio", o.Ratio), zap.Float64("seconds", o.Seconds))
	d.finish(log, o)
	log.Info("job released", zap.String("policy", d.opt.Release))
	d.enforceRetention(log)
	return nil
}

// outcome describes a finished job for its announcement and the history.
func (d *Daemon) outcome(event string, job *Job) Outcome {
	o := Outcome{Event: event, Job: job.ID, Dataset: job.Name, Manifest: job.Manifest, Data: job.Data,
		BytesIn: job.BytesIn, BytesOut: job.BytesOut, Seconds: job.Seconds, Time: time.Now().UTC(), Version: d.opt.Version}
	if job.Name != "" {
		o.URI = d.dest.Where(pipeline.DatasetRoot(job.Name))
	}
	if o.BytesOut > 0 {
		o.Ratio = float64(o.BytesIn) / float64(o.BytesOut)
	}
	return o
}

// finish records a finished job in the history and announces it.
func (d *Daemon) finish(log *zap.Logger, o Outcome) {
	if err := d.journal.AddHistory(o); err != nil {
		log.Warn("journal: recording the job's history", zap.Error(err))
	}
	d.announce.add(o)
}

// checkRawUnchanged holds a claimed raw file to the size and mtime it was
// claimed with. A raw file already released (moved or deleted before a
// crash) passes: it left the job directory only after this check.
func (d *Daemon) checkRawUnchanged(dir string, job *Job) error {
	if job.RawModTime.IsZero() {
		return nil // claimed by a version that did not record it
	}
	fi, err := os.Lstat(filepath.Join(dir, job.Data))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Size() != job.RawSize || !fi.ModTime().Equal(job.RawModTime) {
		return &pipeline.InputError{Err: fmt.Errorf("raw file %s changed after it was claimed (%d bytes, modified %s; claimed with %d bytes, modified %s): "+
			"the dataset holds only what was there at the claim, so the file is kept, not released",
			job.Data, fi.Size(), fi.ModTime().UTC().Format(time.RFC3339Nano), job.RawSize, job.RawModTime.Format(time.RFC3339Nano))}
	}
	return nil
}

// freeName is base/name, or base/name.N when that is taken; it creates
// nothing.
func freeName(base, name string) (string, error) {
	for i := 0; i < 1000; i++ {
		p := filepath.Join(base, name)
		if i > 0 {
			p = fmt.Sprintf("%s.%d", p, i)
		}
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: no free name for %s", base, name)
}

// freshDir makes base/name, or base/name.N when that is taken.
func freshDir(base, name string) (string, error) {
	for i := 0; i < 1000; i++ {
		p := filepath.Join(base, name)
		if i > 0 {
			p = fmt.Sprintf("%s.%d", p, i)
		}
		if err := os.Mkdir(p, 0o750); err == nil {
			return p, nil
		} else if !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("%s: no free name for %s", base, name)
}

// errorReport is failed/<id>/<id>.error.json.
type errorReport struct {
	Reason   string    `json:"reason"`
	Time     time.Time `json:"time"`
	Version  string    `json:"zspool_version"`
	Manifest string    `json:"manifest"`
	Data     string    `json:"data,omitempty"`
	Attempts int       `json:"attempts,omitempty"`
}

// failJob moves a claimed job's files to failed/ with the reason, and
// aborts whatever uploads the job left.
func (d *Daemon) failJob(ctx context.Context, log *zap.Logger, job *Job, cause error) {
	dir := filepath.Join(d.jobsDir, job.ID)
	kept, err := d.quarantine(dir, job.ID, []string{job.Data, job.Manifest}, errorReport{
		Reason: cause.Error(), Manifest: job.Manifest, Data: job.Data, Attempts: job.Attempts})
	if err != nil {
		log.Error("moving a failed job to failed/", zap.Error(err))
		return
	}
	_ = os.Remove(dir)
	_ = d.journal.Delete(job.ID)
	if err := d.sweepDataset(ctx, job.Name); err != nil {
		log.Warn("uploads of a failed job not aborted yet; the periodic sweep retries", zap.Error(err))
	}
	d.m.jobs.WithLabelValues("failed").Inc()
	log.Error("job failed: bad input", zap.String("reason", cause.Error()), zap.String("kept", kept))
	o := d.outcome("failed", job)
	o.Error, o.Kept = cause.Error(), kept
	d.finish(log, o)
}

// failSpool fails an acquisition straight from the spool (it never got
// far enough to be claimed).
func (d *Daemon) failSpool(id, manifest string, withData bool, cause error) {
	root, err := os.OpenRoot(d.opt.SpoolDir)
	if err != nil {
		d.log.Error("fail", zap.Error(err))
		return
	}
	data := dataName(root, id, manifest)
	root.Close()
	files := []string{manifest}
	if data != "" && withData {
		if _, err := os.Lstat(filepath.Join(d.opt.SpoolDir, data)); err == nil {
			files = []string{data, manifest}
		}
	}
	kept, err := d.quarantine(d.opt.SpoolDir, id, files, errorReport{Reason: cause.Error(), Manifest: manifest, Data: data})
	if err != nil {
		d.log.Error("moving bad input to failed/", zap.String("manifest", manifest), zap.Error(err))
		return
	}
	d.m.jobs.WithLabelValues("failed").Inc()
	d.log.Error("acquisition failed: bad input", zap.String("job", id), zap.String("reason", cause.Error()), zap.String("kept", kept))
	d.finish(d.log, Outcome{Event: "failed", Job: id, Manifest: manifest, Data: data, Error: cause.Error(), Kept: kept,
		Time: time.Now().UTC(), Version: d.opt.Version})
}

// quarantine moves files into failed/<id>/ and then writes the report,
// whole, by rename: whoever sees <id>.error.json (an operator, a monitor,
// a test) finds it complete and the files already beside it.
func (d *Daemon) quarantine(from, id string, files []string, rep errorReport) (string, error) {
	to, err := freshDir(d.opt.FailedDir, id)
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if err := moveInto(from, to, f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	rep.Time, rep.Version = time.Now().UTC(), d.opt.Version
	b, _ := jsonIndent(rep)
	tmp := filepath.Join(to, "."+id+".error.json.tmp")
	if err := os.WriteFile(tmp, b, 0o640); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, filepath.Join(to, id+".error.json")); err != nil {
		return "", err
	}
	return to, syncDir(to)
}

// dataName is the raw file a manifest names (its default when the manifest
// cannot be parsed, "" when even that is not a plain name).
func dataName(root *os.Root, id, manifest string) string {
	// Never a plain open: a FIFO named *.json would block the main loop.
	if b, err := pipeline.ReadManifest(root, manifest); err == nil {
		if m, perr := config.ParseManifest(b, id); perr == nil {
			return m.Data
		}
	}
	name := id + ".raw"
	if path.Base(name) != name || strings.HasPrefix(name, ".") {
		return ""
	}
	return name
}

// checkDest refuses to write over a dataset that is already at the
// destination: a second acquisition of one name, or one dropped again,
// would otherwise replace stored data (and, with release.policy delete,
// lose the first raw file for good). It runs once per job, before its
// first object; with overwrite the old dataset is removed first.
func (d *Daemon) checkDest(ctx context.Context, job *Job) error {
	if job.DestChecked {
		return nil
	}
	root := pipeline.DatasetRoot(job.Name)
	who, err := d.storedBy(ctx, root)
	if err != nil {
		return err
	}
	if who != "" {
		where := d.dest.Where(root)
		if !d.opt.Overwrite {
			return &pipeline.InputError{Err: fmt.Errorf("dataset %s already exists (%s); acquisition %s (manifest %s) would overwrite it, "+
				"so nothing was written and the stored dataset is untouched: rename the dataset in the manifest, remove the stored one, or set overwrite: true",
				where, who, job.ID, job.Manifest)}
		}
		d.log.Warn("overwrite: removing the stored dataset before writing it anew", zap.String("job", job.ID),
			zap.String("dataset", where), zap.String("stored", who))
		if err := d.dest.RemoveAll(ctx, root); err != nil {
			return fmt.Errorf("removing %s: %w", where, err)
		}
	}
	_, err = d.journal.Update(job.ID, func(j *Job) { j.DestChecked = true })
	return err
}

// storedBy describes the dataset at root ("" when there is none): whose
// acquisition its provenance names, or that it is incomplete.
func (d *Daemon) storedBy(ctx context.Context, root string) (string, error) {
	b, err := d.dest.Get(ctx, path.Join(root, "zarr.json"))
	switch {
	case err == nil:
		var g struct {
			Attributes struct {
				Zspool *pipeline.Provenance `json:"zspool"`
			} `json:"attributes"`
		}
		if json.Unmarshal(b, &g) == nil && g.Attributes.Zspool != nil {
			p := g.Attributes.Zspool
			return fmt.Sprintf("written from acquisition manifest %s, raw file %s (%d bytes) by zspool %s", p.Manifest, p.Data, p.Bytes, p.Version), nil
		}
		return "a group written by another tool", nil
	case !errors.Is(err, zarr.ErrNotFound):
		return "", fmt.Errorf("looking for an existing dataset %s: %w", root, err)
	}
	// Array documents are written first, the group last: an array
	// without its group is a dataset some writer left unfinished.
	if _, err := d.dest.Size(ctx, path.Join(root, "0", "zarr.json")); err == nil {
		return "an unfinished dataset: arrays without a group document", nil
	} else if !errors.Is(err, zarr.ErrNotFound) {
		return "", fmt.Errorf("looking for an existing dataset %s: %w", root, err)
	}
	return "", nil
}
