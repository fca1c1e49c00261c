package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// metrics are the daemon's Prometheus series, on a registry of its own (no
// package-level state).
type metrics struct {
	reg      *prometheus.Registry
	queue    prometheus.Gauge
	running  prometheus.Gauge
	waiting  prometheus.Gauge
	jobs     *prometheus.CounterVec
	bytesIn  prometheus.Counter
	bytesOut prometheus.Counter
	retries  prometheus.Counter
	layers   prometheus.Counter
	stage    *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg:      prometheus.NewRegistry(),
		queue:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "zspool_queue_depth", Help: "Acquisitions ready in the spool or recovered, not yet started."}),
		running:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "zspool_jobs_running", Help: "Jobs converting now."}),
		waiting:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "zspool_spool_waiting", Help: "Manifests whose raw file is not (yet) the size they describe."}),
		jobs:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zspool_jobs_total", Help: "Jobs by outcome: stored (released), failed (bad input), retried (transient fault)."}, []string{"outcome"}),
		bytesIn:  prometheus.NewCounter(prometheus.CounterOpts{Name: "zspool_bytes_in_total", Help: "Raw bytes converted."}),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "zspool_bytes_out_total", Help: "Bytes of objects written."}),
		retries:  prometheus.NewCounter(prometheus.CounterOpts{Name: "zspool_upload_retries_total", Help: "S3 requests retried."}),
		layers:   prometheus.NewCounter(prometheus.CounterOpts{Name: "zspool_shard_layers_total", Help: "Shard layers committed."}),
		stage:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zspool_stage_seconds_total", Help: "Time spent per pipeline stage."}, []string{"stage"}),
	}
	m.reg.MustRegister(m.queue, m.running, m.waiting, m.jobs, m.bytesIn, m.bytesOut, m.retries, m.layers, m.stage,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	for _, o := range []string{"stored", "failed", "retried"} {
		m.jobs.WithLabelValues(o)
	}
	return m
}

// serve runs /metrics, /healthz and /readyz on addr until ctx ends.
// healthz answers while the main loop ticks; readyz once recovery is done.
func (m *metrics) serve(ctx context.Context, log *zap.Logger, addr string, healthy, ready func() bool) (net.Addr, error) {
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
