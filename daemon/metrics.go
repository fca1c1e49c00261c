package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// metrics are the daemon's Prometheus series, on a registry of its own (no
// package-level state). Names follow Prometheus's conventions: units as
// suffixes, _total for counters, one meaning per series.
type metrics struct {
	reg         *prometheus.Registry
	queue       prometheus.Gauge
	running     prometheus.Gauge
	waiting     prometheus.Gauge
	oldestWait  prometheus.Gauge
	jobs        *prometheus.CounterVec
	jobRetries  prometheus.Counter
	duration    prometheus.Histogram
	lastSuccess prometheus.Gauge
	bytesIn     prometheus.Counter
	bytesOut    prometheus.Counter
	retries     prometheus.Counter
	layers      prometheus.Counter
	stage       *prometheus.CounterVec
	notifyDrop  prometheus.Counter
	notifyFail  prometheus.Counter
}

// metricsInfo is what build_info and the filesystem gauges report.
type metricsInfo struct {
	version, revision, engine string
	dirs                      map[string]string // label → directory whose filesystem's free bytes are reported
}

func newMetrics(info metricsInfo) *metrics {
	m := &metrics{
		reg:         prometheus.NewRegistry(),
		queue:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "zspool_queue_depth", Help: "Acquisitions ready in the spool or recovered, not yet started."}),
		running:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "zspool_jobs_running", Help: "Jobs converting now."}),
		waiting:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "zspool_spool_waiting", Help: "Manifests not claimed yet: files still changing, or a raw file not (yet) the size they describe."}),
		oldestWait:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "zspool_oldest_waiting_seconds", Help: "Age of the oldest acquisition waiting in the spool (0 when none waits)."}),
		jobs:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zspool_jobs_total", Help: "Finished jobs by outcome: stored (released) or failed (bad input, kept in failed_dir)."}, []string{"outcome"}),
		jobRetries:  prometheus.NewCounter(prometheus.CounterOpts{Name: "zspool_job_retries_total", Help: "Job attempts that met a transient fault and were retried."}),
		duration:    prometheus.NewHistogram(prometheus.HistogramOpts{Name: "zspool_job_duration_seconds", Help: "Seconds from claim to release of stored jobs.", Buckets: prometheus.ExponentialBuckets(1, 2, 16)}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "zspool_last_success_timestamp_seconds", Help: "Unix time of the last stored job (0: none since start)."}),
		bytesIn:     prometheus.NewCounter(prometheus.CounterOpts{Name: "zspool_input_bytes_total", Help: "Raw bytes converted."}),
		bytesOut:    prometheus.NewCounter(prometheus.CounterOpts{Name: "zspool_output_bytes_total", Help: "Bytes of objects written."}),
		retries:     prometheus.NewCounter(prometheus.CounterOpts{Name: "zspool_upload_retries_total", Help: "S3 requests retried."}),
		layers:      prometheus.NewCounter(prometheus.CounterOpts{Name: "zspool_shard_layers_total", Help: "Shard layers committed."}),
		stage:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zspool_stage_seconds_total", Help: "Time spent per pipeline stage."}, []string{"stage"}),
		notifyDrop:  prometheus.NewCounter(prometheus.CounterOpts{Name: "zspool_notifications_dropped_total", Help: "Notifications dropped: the queue was full, or every attempt failed."}),
		notifyFail:  prometheus.NewCounter(prometheus.CounterOpts{Name: "zspool_notification_failures_total", Help: "Notification attempts that failed (each is retried)."}),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "zspool_build_info", Help: "1, labelled with the build's version, VCS revision and configured engine."}, []string{"version", "revision", "engine"})
	build.WithLabelValues(info.version, info.revision, info.engine).Set(1)
	m.reg.MustRegister(m.queue, m.running, m.waiting, m.oldestWait, m.jobs, m.jobRetries, m.duration, m.lastSuccess,
		m.bytesIn, m.bytesOut, m.retries, m.layers, m.stage, m.notifyDrop, m.notifyFail, build,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	for label, dir := range info.dirs {
		// Read at scrape time, one series per directory.
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "zspool_filesystem_free_bytes", Help: "Bytes available to the daemon on the filesystem of a directory it needs.",
			ConstLabels: prometheus.Labels{"dir": label}}, func() float64 { return freeBytes(dir) }))
	}
	for _, o := range []string{"stored", "failed"} {
		m.jobs.WithLabelValues(o)
	}
	return m
}

// freeBytes is what an unprivileged writer may still use on dir's
// filesystem (-1 when it cannot be read).
func freeBytes(dir string) float64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1
	}
	return float64(st.Bavail) * float64(st.Bsize)
}

// serve runs /metrics, /healthz and /readyz on addr until ctx ends.
// healthz answers while the main loop ticks; readyz once recovery is done.
func (m *metrics) serve(ctx context.Context, log *zap.Logger, addr string, healthy, ready func() bool, jobs http.HandlerFunc) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	probe := func(ok func() bool, what string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if !ok() {
				http.Error(w, what+": not yet", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, what+": ok")
		}
	}
	mux.Handle("/healthz", probe(healthy, "healthy"))
	mux.Handle("/readyz", probe(ready, "ready"))
	mux.Handle("/jobs", jobs)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", zap.Error(err))
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr(), nil
}
