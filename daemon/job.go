package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/destination"
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
		if err := d.claim(it); err != nil {
			log.Error("claim failed; the files stay in the spool", zap.Error(err))
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
			err = d.convert(jobCtx, log, job)
			if err == nil {
				err = d.confirmStored(jobCtx, job)
			}
			if err == nil {
				_, err = d.journal.Update(job.ID, func(j *Job) { j.State = StateStored })
			}
		case StateStored:
			err = d.release(log, job)
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
			d.failJob(log, job, err)
			return
		}
		// Anything else is taken as transient (destination down, disk
		// full, …): retried, never quarantined.
		d.m.jobs.WithLabelValues("retried").Inc()
		_, _ = d.journal.Update(job.ID, func(j *Job) { j.Attempts++; j.LastError = err.Error() })
		log.Warn("transient fault: retrying", zap.Error(err), zap.Duration("in", backoff), zap.Int("attempt", job.Attempts+1))
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, d.opt.JobMaxBackoff)
	}
}

// claim moves the manifest and raw file into the job's state directory.
// The journal says "claiming" first, so a crash midway is finished on the
// next start rather than losing track of a half-moved acquisition.
func (d *Daemon) claim(it item) error {
	job := &Job{ID: it.id, State: StateClaiming, Manifest: it.manifest, Data: it.data, Name: it.name, Created: time.Now().UTC()}
	if err := d.journal.Put(job); err != nil {
		return err
	}
	return d.finishClaim(job)
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
	_, err := d.journal.Update(job.ID, func(j *Job) { j.State = StateProcessing })
	return err
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
	opts := pipeline.Options{MemoryBudget: d.opt.MemoryBudget / int64(d.opt.ConcurrentJobs), PartSize: d.opt.Dest.PartSize,
		ZstdEncoder: d.opt.ZstdEncoder, ZstdChecksum: d.opt.ZstdChecksum, GPU: d.opt.GPU}
	destination.PlanMemory(d.dest, &opts)
	plan, err := pipeline.NewPlan(src.Manifest, src.RawName, src.RawSize, opts)
	if err != nil {
		// A plan that cannot run here will not run on a retry either.
		return &pipeline.InputError{Err: err}
	}
	newEngine := d.opt.NewEngine
	if newEngine == nil {
		newEngine = func(p *pipeline.Plan) (pipeline.Engine, error) { return pipeline.NewCPU(p) }
	}
	eng, err := newEngine(plan)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	defer eng.Close()
	first := min(job.LayersDone, plan.ShardLayers())
	if first > 0 {
		log.Info("job resumed", zap.Int64("layer", first), zap.Int64("layers", plan.ShardLayers()))
	} else {
		log.Info("job started", zap.Int64("bytes", src.RawSize), zap.Int64("layers", plan.ShardLayers()))
	}
	res, err := pipeline.Convert(ctx, log, src, plan, eng, d.dest, pipeline.ConvertOptions{
		Version:    d.opt.Version,
		FirstLayer: first,
		LayerDone: func(resume int64) error {
			if _, err := d.journal.Update(job.ID, func(j *Job) { j.LayersDone = resume }); err != nil {
				return fmt.Errorf("journal: %w", err)
			}
			d.m.layers.Inc()
			log.Debug("shard layer stored", zap.Int64("layer", resume-1))
			if d.stopping.Load() && resume < plan.ShardLayers() {
				return errStopping
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	d.m.bytesIn.Add(float64(res.BytesIn))
	d.m.bytesOut.Add(float64(res.BytesOut))
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
	ds, err := zarr.Open(ctx, d.dest, job.Name+".ome.zarr")
	if err != nil {
		return fmt.Errorf("stored check: %w", err)
	}
	var n int
	for _, a := range ds.Levels {
		extent := make([]int64, a.Grid.Rank())
		for k := range extent {
			extent[k] = a.Grid.Shards(k)
		}
		err := zarr.ForEach(extent, func(g []int64) error {
			n++
			if _, err := d.dest.Size(ctx, a.ShardKey(g)); err != nil {
				return fmt.Errorf("stored check: %w", err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	d.log.Debug("every object stored", zap.String("job", job.ID), zap.Int("shards", n))
	return nil
}

// release archives or deletes the raw file and manifest, then forgets the
// job. Each step tolerates having been done before a crash.
func (d *Daemon) release(log *zap.Logger, job *Job) error {
	dir := filepath.Join(d.jobsDir, job.ID)
	if d.opt.Release == "delete" {
		for _, f := range []string{job.Data, job.Manifest} {
			if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	} else {
		to, err := freshDir(d.opt.ArchiveDir, job.ID)
		if err != nil {
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
	log.Info("job released", zap.String("policy", d.opt.Release))
	return nil
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

// failJob moves a claimed job's files to failed/ with the reason.
func (d *Daemon) failJob(log *zap.Logger, job *Job, cause error) {
	dir := filepath.Join(d.jobsDir, job.ID)
	if err := d.quarantine(dir, job.ID, []string{job.Data, job.Manifest}, errorReport{
		Reason: cause.Error(), Manifest: job.Manifest, Data: job.Data, Attempts: job.Attempts}); err != nil {
		log.Error("moving a failed job to failed/", zap.Error(err))
		return
	}
	_ = os.Remove(dir)
	_ = d.journal.Delete(job.ID)
	d.m.jobs.WithLabelValues("failed").Inc()
	log.Error("job failed: bad input", zap.String("reason", cause.Error()))
}

// failSpool fails an acquisition straight from the spool (it never got
// far enough to be claimed).
func (d *Daemon) failSpool(id, manifest string, cause error) {
	root, err := os.OpenRoot(d.opt.SpoolDir)
	if err != nil {
		d.log.Error("fail", zap.Error(err))
		return
	}
	data := dataName(root, id, manifest)
	root.Close()
	files := []string{manifest}
	if data != "" {
		if _, err := os.Lstat(filepath.Join(d.opt.SpoolDir, data)); err == nil {
			files = []string{data, manifest}
		}
	}
	if err := d.quarantine(d.opt.SpoolDir, id, files, errorReport{Reason: cause.Error(), Manifest: manifest, Data: data}); err != nil {
		d.log.Error("moving bad input to failed/", zap.String("manifest", manifest), zap.Error(err))
		return
	}
	d.m.jobs.WithLabelValues("failed").Inc()
	d.log.Error("acquisition failed: bad input", zap.String("job", id), zap.String("reason", cause.Error()))
}

// quarantine moves files into failed/<id>/ and then writes the report,
// whole, by rename: whoever sees <id>.error.json (an operator, a monitor,
// a test) finds it complete and the files already beside it.
func (d *Daemon) quarantine(from, id string, files []string, rep errorReport) error {
	to, err := freshDir(d.opt.FailedDir, id)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := moveInto(from, to, f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	rep.Time, rep.Version = time.Now().UTC(), d.opt.Version
	b, _ := jsonIndent(rep)
	tmp := filepath.Join(to, "."+id+".error.json.tmp")
	if err := os.WriteFile(tmp, b, 0o640); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(to, id+".error.json")); err != nil {
		return err
	}
	return syncDir(to)
}

// dataName is the raw file a manifest names (its default when the manifest
// cannot be parsed, "" when even that is not a plain name).
func dataName(root *os.Root, id, manifest string) string {
	f, err := root.Open(manifest)
	if err == nil {
		b, rerr := io.ReadAll(io.LimitReader(f, 1<<20))
		f.Close()
		if rerr == nil {
			if m, perr := config.ParseManifest(b, id); perr == nil {
				return m.Data
			}
		}
	}
	name := id + ".raw"
	if path.Base(name) != name || strings.HasPrefix(name, ".") {
		return ""
	}
	return name
}
