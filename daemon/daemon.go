package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/zspool/zspool/destination"
	"github.com/zspool/zspool/engine"
	"github.com/zspool/zspool/pipeline"
)

// Options configure a daemon; the CLI fills them from the config file.
type Options struct {
	SpoolDir        string
	StateDir        string
	FailedDir       string
	Release         string // archive or delete
	ArchiveDir      string
	Dest            destination.Config
	ConcurrentJobs  int
	MemoryBudget    int64 // shared by the concurrent jobs
	Settle          time.Duration
	RescanInterval  time.Duration
	ShutdownTimeout time.Duration
	JobBackoff      time.Duration
	JobMaxBackoff   time.Duration
	MetricsListen   string // host:port, or "" for none
	Version         string
	Revision        string // VCS revision of the build, for zspool_build_info
	EngineName      string // the configured engine (auto, cpu, gpu), for zspool_build_info
	// Announce says who hears of each stored or failed job.
	Announce AnnounceOptions
	// ArchiveMaxAge and ArchiveMaxBytes bound release.policy archive's
	// directory (0: no bound); the oldest archived acquisitions go first.
	ArchiveMaxAge   time.Duration
	ArchiveMaxBytes int64
	// ZstdEncoder is each job's pipeline.Options.ZstdEncoder: empty for
	// the engine's own, pipeline.EncoderKlauspost, pipeline.EncoderWindow
	// or pipeline.EncoderSegmented (or pipeline.EncoderLit, its old name).
	ZstdEncoder string
	// ZstdChecksum is each job's pipeline.Options.ZstdChecksum: append
	// XXH64 content checksums to the zstd frames.
	ZstdChecksum bool
	// Overwrite lets a job replace a dataset of its name that is already
	// at the destination; without it such a job fails, naming both
	// acquisitions, and nothing of the stored dataset is touched.
	Overwrite bool
	// GPU is each job's pipeline.Options.GPU: plan the GPU engine's
	// host memory (the CLI sets it when the config's engine will be the
	// GPU).
	GPU bool
	// Engine is the config's engine: auto, cpu or gpu (engine.New); empty
	// is cpu.
	Engine string
	// Devices keeps the GPU context open across jobs; nil opens one per
	// job. The caller closes it after Run returns.
	Devices *engine.Devices
	// NewEngine, when set, makes the engine for a job's plan in place of
	// engine.New (tests wrap engines). An error is taken as transient (a
	// GPU busy or gone) unless it is an InputError.
	NewEngine func(*pipeline.Plan) (pipeline.Engine, error)
}

// Daemon is the running service.
type Daemon struct {
	opt      Options
	log      *zap.Logger
	dest     destination.Store
	uploads  uploadStore // the destination, when it leaves pending uploads (S3); else nil
	journal  *Journal
	m        *metrics
	notify   *notifier
	announce *announcer
	jobsDir  string

	mu      sync.Mutex
	queue   []item             // ready, not started
	active  map[string]bool    // queued or running, by job id
	names   map[string]string  // dataset name → job id, while running
	waiting map[string]pending // manifests whose raw file is not the right size yet
	wake    chan struct{}

	ready       atomic.Bool
	lastTick    atomic.Int64
	stopping    atomic.Bool // finish the current shard layer, then stop
	metrics     atomic.Pointer[net.Addr]
	retentionMu sync.Mutex // one retention pass at a time
	// lastRetryLog is when a retried S3 request was last logged (unix ns).
	lastRetryLog atomic.Int64
}

// item is one unit of work for a worker.
type item struct {
	id        string
	manifest  string
	data      string
	name      string
	recovered bool // already claimed: the journal has it
}

// New checks the directories, opens the journal and the destination (an
// S3 one is probed now: a wrong bucket or key fails the start, not a job).
func New(ctx context.Context, log *zap.Logger, opt Options) (*Daemon, error) {
	if opt.FailedDir == "" {
		opt.FailedDir = filepath.Join(opt.StateDir, "failed")
	}
	if opt.ArchiveDir == "" {
		opt.ArchiveDir = filepath.Join(opt.StateDir, "archive")
	}
	opt.ConcurrentJobs = max(1, opt.ConcurrentJobs)
	// Refused here, not per job: a plan refused for it would send every
	// acquisition to failed_dir as bad input.
	if err := pipeline.CheckZstdEncoder(opt.ZstdEncoder); err != nil {
		return nil, fmt.Errorf("zstd_encoder: %w", err)
	}
	m := newMetrics(metricsInfo{version: opt.Version, revision: opt.Revision, engine: opt.EngineName,
		dirs: map[string]string{"spool": opt.SpoolDir, "state": opt.StateDir}})
	d := &Daemon{opt: opt, log: log, m: m, notify: newNotifier(log), announce: newAnnouncer(log, m, opt.Announce),
		jobsDir: filepath.Join(opt.StateDir, "jobs"),
		active:  map[string]bool{}, names: map[string]string{}, waiting: map[string]pending{},
		wake: make(chan struct{}, 1)}
	if fi, err := os.Stat(opt.SpoolDir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("spool_dir %s: not a directory (%v)", opt.SpoolDir, err)
	}
	for _, dir := range []string{opt.StateDir, d.jobsDir, opt.FailedDir, opt.ArchiveDir} {
		if opt.Release != "archive" && dir == opt.ArchiveDir {
			continue
		}
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("state: %w", err)
		}
	}
	if err := sameFilesystem(opt.SpoolDir, d.jobsDir); err != nil {
		return nil, err
	}
	j, err := OpenJournal(filepath.Join(opt.StateDir, "journal.db"))
	if err != nil {
		return nil, err
	}
	d.journal = j
	opt.Dest.OnRetry = d.onS3Retry
	dest, err := destination.Open(ctx, log, opt.Dest)
	if err != nil {
		j.Close()
		return nil, err
	}
	d.dest = dest
	if u, ok := dest.(uploadStore); ok {
		d.uploads = u
		d.trackUploads()
	}
	return d, nil
}

// jobOfKey finds the running job that writes an object key.
func (d *Daemon) jobOfKey(key string) string {
	name := nameOfKey(key)
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.names[name]
}

// MetricsAddr is where /metrics listens, or nil before Run has started it.
func (d *Daemon) MetricsAddr() net.Addr {
	if a := d.metrics.Load(); a != nil {
		return *a
	}
	return nil
}

// Run serves until ctx ends, then stops intake, lets running jobs finish
// their current shard layer (up to ShutdownTimeout), records progress and
// returns nil.
func (d *Daemon) Run(ctx context.Context) error {
	defer d.journal.Close()
	d.lastTick.Store(time.Now().UnixNano())
	if d.opt.MetricsListen != "" {
		addr, err := d.m.serve(ctx, d.log, d.opt.MetricsListen, d.healthy, d.ready.Load, d.serveJobs)
		if err != nil {
			return err
		}
		d.metrics.Store(&addr)
	}
	if err := d.recover(ctx); err != nil {
		return fmt.Errorf("recovery: %w", err)
	}
	// The watch goes in before the first scan, so a file that lands
	// between the two is seen by one of them.
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", d.opt.SpoolDir, err)
	}
	defer w.Close()
	if err := w.Add(d.opt.SpoolDir); err != nil {
		return fmt.Errorf("watch %s: %w", d.opt.SpoolDir, err)
	}
	d.scan()

	// Announcements outlive the intake: what the last jobs report is
	// still sent, for a few seconds after they stop.
	annCtx, cancelAnn := context.WithCancel(context.WithoutCancel(ctx))
	annDone := make(chan struct{})
	go func() { defer close(annDone); d.announce.run(annCtx) }()
	defer func() {
		d.announce.drain(announceDrain)
		cancelAnn()
		<-annDone
	}()

	jobCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()
	var wg sync.WaitGroup
	for range d.opt.ConcurrentJobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.worker(ctx, jobCtx)
		}()
	}
	d.ready.Store(true)
	d.notify.Ready()
	d.log.Info("zspool running", zap.String("spool", d.opt.SpoolDir), zap.String("state", d.opt.StateDir),
		zap.Int("concurrent_jobs", d.opt.ConcurrentJobs), zap.String("version", d.opt.Version))

	d.loop(ctx, w)

	d.notify.Stopping()
	d.stopping.Store(true)
	d.kick()
	d.log.Info("stopping: running jobs finish their shard layer", zap.Duration("deadline", d.opt.ShutdownTimeout))
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d.opt.ShutdownTimeout):
		d.log.Warn("shutdown deadline passed: cancelling running jobs; they resume from the journal")
		cancelJobs()
		<-done
	}
	d.log.Info("stopped")
	return nil
}

// loop reacts to spool events, rescans, pings the watchdog and retires
// waiting manifests, until ctx ends.
func (d *Daemon) loop(ctx context.Context, w *fsnotify.Watcher) {
	rescan := time.NewTicker(d.opt.RescanInterval)
	defer rescan.Stop()
	dog := time.NewTicker(d.notify.WatchdogEvery())
	defer dog.Stop()
	// Events come in bursts (a raw file written in pieces): coalesce them
	// into one scan shortly after the burst.
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	settle := time.NewTicker(max(d.opt.Settle/4, 100*time.Millisecond))
	defer settle.Stop()
	sweep := time.NewTicker(sweepEvery)
	defer sweep.Stop()
	var sweeping atomic.Bool // one periodic sweep at a time, off the loop
	var sweeps sync.WaitGroup
	defer sweeps.Wait()
	for {
		d.lastTick.Store(time.Now().UnixNano())
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if !ignored(filepath.Base(ev.Name)) {
				debounce.Reset(100 * time.Millisecond)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				d.log.Warn("spool events overflowed: rescanning")
			} else {
				d.log.Warn("spool watch error: rescanning", zap.Error(err))
			}
			d.scan()
		case <-debounce.C:
			d.scan()
		case <-rescan.C:
			d.scan()
			d.enforceRetention(d.log)
		case <-settle.C:
			if d.waitingCount() > 0 {
				d.scan()
			}
		case <-dog.C:
			d.notify.Watchdog()
		case <-sweep.C:
			// Off the loop: an unreachable destination must not stall
			// intake or the watchdog.
			if sweeping.CompareAndSwap(false, true) {
				sweeps.Add(1)
				go func() {
					defer sweeps.Done()
					defer sweeping.Store(false)
					d.sweepStale(ctx)
				}()
			}
		}
	}
}

func (d *Daemon) healthy() bool {
	// The loop ticks at least every watchdog interval (≤ 1 min).
	return time.Since(time.Unix(0, d.lastTick.Load())) < 2*d.notify.WatchdogEvery()+time.Minute
}

func (d *Daemon) waitingCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.waiting)
}

func (d *Daemon) kick() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// next takes the first queued item, waiting for one; ok=false when the
// daemon is stopping.
func (d *Daemon) next(ctx context.Context) (item, bool) {
	for {
		if ctx.Err() != nil || d.stopping.Load() {
			return item{}, false
		}
		d.mu.Lock()
		// The first item whose dataset nobody writes or sweeps now; two
		// acquisitions of one name never run at once.
		for i, it := range d.queue {
			if _, busy := d.names[it.name]; busy {
				continue
			}
			d.queue = append(d.queue[:i:i], d.queue[i+1:]...)
			d.m.queue.Set(float64(len(d.queue)))
			d.names[it.name] = it.id
			d.mu.Unlock()
			return it, true
		}
		d.mu.Unlock()
		select {
		case <-d.wake:
		case <-ctx.Done():
		}
	}
}

func (d *Daemon) enqueue(it item) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.active[it.id] {
		return
	}
	d.active[it.id] = true
	d.queue = append(d.queue, it)
	d.m.queue.Set(float64(len(d.queue)))
	d.kick()
}

func (d *Daemon) finished(it item) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.active, it.id)
	delete(d.names, it.name)
}

func (d *Daemon) busyName(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, busy := d.names[name]
	return busy
}

func (d *Daemon) isActive(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.active[id]
}

func (d *Daemon) worker(ctx, jobCtx context.Context) {
	for {
		it, ok := d.next(ctx)
		if !ok {
			return
		}
		d.m.running.Inc()
		d.run(ctx, jobCtx, it)
		d.m.running.Dec()
		d.finished(it)
		d.kick()
	}
}
