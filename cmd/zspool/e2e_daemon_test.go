package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/daemon"
	"github.com/zspool/zspool/destination"
	"github.com/zspool/zspool/internal/s3test"
	"github.com/zspool/zspool/zarr"
)

// daemonEnv is a spool, a state dir and a running in-process daemon.
type daemonEnv struct {
	t      *testing.T
	opt    daemon.Options
	cancel context.CancelFunc
	done   chan error
	d      *daemon.Daemon
}

func (b *backend) spec(endpoint, prefix string) destination.Config {
	return destination.Config{
		Destination: config.Destination{URL: "s3://" + testBucket + "/" + prefix, Endpoint: endpoint, PathStyle: true,
			CredentialsFile: b.creds, PartSize: 5 << 20},
		Retry: config.Retry{MaxAttempts: 3, MaxBackoff: config.Duration(50 * time.Millisecond)},
	}
}

func startDaemon(t *testing.T, dest destination.Config, tweak func(*daemon.Options)) *daemonEnv {
	t.Helper()
	base := t.TempDir()
	opt := daemon.Options{
		SpoolDir: filepath.Join(base, "spool"), StateDir: filepath.Join(base, "state"), Release: "archive",
		Dest: dest, ConcurrentJobs: 2, MemoryBudget: 768 << 20, Settle: 300 * time.Millisecond,
		RescanInterval: time.Second, ShutdownTimeout: 20 * time.Second, JobBackoff: 100 * time.Millisecond,
		JobMaxBackoff: time.Second, MetricsListen: "127.0.0.1:0", Version: "test",
	}
	must(t, os.MkdirAll(opt.SpoolDir, 0o755))
	if tweak != nil {
		tweak(&opt)
	}
	d, err := daemon.New(context.Background(), zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &daemonEnv{t: t, opt: opt, cancel: cancel, done: make(chan error, 1), d: d}
	go func() { e.done <- d.Run(ctx) }()
	e.waitFor("metrics endpoint", func() bool { return d.MetricsAddr() != nil && e.get("/readyz") == "ready: ok\n" })
	t.Cleanup(e.stop)
	return e
}

func (e *daemonEnv) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	if err := <-e.done; err != nil {
		e.t.Errorf("daemon Run: %v", err)
	}
	e.cancel = nil
}

func (e *daemonEnv) get(path string) string {
	addr := e.d.MetricsAddr()
	if addr == nil {
		return ""
	}
	resp, err := http.Get("http://" + addr.String() + path)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// metric reads one sample from /metrics (0 when absent).
func (e *daemonEnv) metric(series string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+]+)$`)
	m := re.FindStringSubmatch(e.get("/metrics"))
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func (e *daemonEnv) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// drop puts an acquisition into the spool as acquisition software must:
// raw file first, then the manifest through a temporary name.
func (e *daemonEnv) drop(a *acquisition) {
	e.t.Helper()
	raw := filepath.Join(e.opt.SpoolDir, a.name+".raw")
	must(e.t, os.WriteFile(raw+".part", a.raw, 0o644))
	must(e.t, os.Rename(raw+".part", raw))
	b, _ := json.Marshal(a.manifest)
	mp := filepath.Join(e.opt.SpoolDir, a.name+".json")
	must(e.t, os.WriteFile(mp+".tmp", b, 0o644))
	must(e.t, os.Rename(mp+".tmp", mp))
}

func (e *daemonEnv) archived(id string) bool {
	_, err := os.Stat(filepath.Join(e.opt.StateDir, "archive", id, id+".raw"))
	return err == nil
}

func (e *daemonEnv) failedReport(id string) (map[string]any, bool) {
	b, err := os.ReadFile(filepath.Join(e.opt.StateDir, "failed", id, id+".error.json"))
	if err != nil {
		return nil, false
	}
	var rep map[string]any
	return rep, json.Unmarshal(b, &rep) == nil
}

func (e *daemonEnv) openJobs() int {
	entries, _ := os.ReadDir(filepath.Join(e.opt.StateDir, "jobs"))
	return len(entries)
}

func TestTheDaemonLandsTwentyAcquisitionsOnMinIOWithMetricsMoving(t *testing.T) {
	b := startBackend(t, s3test.StartMinIO)
	e := startDaemon(t, b.spec(b.srv.Endpoint, "daemon"), nil)
	shapes := [][]dimSpec{
		{{6, 2, 2}, {40, 16, 2}, {36, 16, 2}},
		{{5, 2, 2}, {7, 3, 2}, {9, 4, 2}},
		{{3, 1, 1}, {10, 4, 2}, {8, 8, 1}},
		{{12, 1, 4}, {2, 1, 2}, {256, 128, 2}, {256, 128, 1}},
		{{100003, 4096, 4}},
	}
	acqs := map[string]*acquisition{}
	var mu sync.Mutex
	var scrapes []float64
	stopScrape := make(chan struct{})
	scraped := make(chan struct{})
	go func() { // /metrics while the daemon works
		defer close(scraped)
		for {
			select {
			case <-stopScrape:
				return
			case <-time.After(50 * time.Millisecond):
				v := e.metric("zspool_input_bytes_total")
				mu.Lock()
				scrapes = append(scrapes, v)
				mu.Unlock()
			}
		}
	}()
	for i := range 20 {
		sh := shapes[i%len(shapes)]
		a := newAcquisition(fmt.Sprintf("acq_%02d", i), []string{"uint16", "uint8", "int32", "float32"}[i%4], sh)
		a.randomRaw(uint64(300+i), elems(sh))
		acqs[a.name] = a
		e.drop(a) // some land while earlier ones are converting
	}
	e.waitFor("20 acquisitions archived", func() bool {
		for id := range acqs {
			if !e.archived(id) {
				return false
			}
		}
		return true
	})
	close(stopScrape)
	<-scraped
	e.waitFor("no open job", func() bool { return e.openJobs() == 0 })
	s := b.sink(t, "daemon")
	for id := range acqs {
		args := append([]string{"verify", "s3://" + testBucket + "/daemon/" + id + ".ome.zarr", "--raw", filepath.Join(e.opt.StateDir, "archive", id, id+".raw")}, b.flags(b.srv.Endpoint)...)
		if out, stderr, err := zspool(t, args...); err != nil {
			t.Fatalf("verify %s: %v\n%s%s", id, err, out, stderr)
		}
	}
	if ups, _ := s.PendingUploads(context.Background(), ""); len(ups) != 0 {
		t.Fatalf("uploads left: %v", ups)
	}
	if got := e.metric(`zspool_jobs_total{outcome="stored"}`); got != 20 {
		t.Errorf("jobs stored = %v, want 20", got)
	}
	// What dashboards and alerts read (issue 20): durations, the last
	// success, free space, the build.
	if got := e.metric("zspool_job_duration_seconds_count"); got != 20 {
		t.Errorf("job duration observations = %v, want 20", got)
	}
	if got := e.metric("zspool_last_success_timestamp_seconds"); got < float64(time.Now().Add(-time.Hour).Unix()) {
		t.Errorf("last success timestamp %v, want a recent unix time", got)
	}
	for _, series := range []string{`zspool_filesystem_free_bytes{dir="spool"}`, `zspool_filesystem_free_bytes{dir="state"}`} {
		if got := e.metric(series); got <= 0 {
			t.Errorf("%s = %v, want the free bytes", series, got)
		}
	}
	if m := e.get("/metrics"); !strings.Contains(m, `zspool_build_info{engine=`) || strings.Contains(m, `outcome="retried"`) {
		t.Errorf("/metrics lacks zspool_build_info, or still mixes retries into jobs_total")
	}
	mu.Lock()
	defer mu.Unlock()
	distinct := map[float64]bool{}
	for _, v := range scrapes {
		distinct[v] = true
	}
	if len(distinct) < 3 {
		t.Errorf("zspool_input_bytes_total took %d values while the daemon worked, want it moving: %v", len(distinct), scrapes)
	}
	t.Logf("bytes_in over the run: %d scrapes, %d distinct values, final %v; bytes_out %v; shard layers %v",
		len(scrapes), len(distinct), e.metric("zspool_input_bytes_total"), e.metric("zspool_output_bytes_total"), e.metric("zspool_shard_layers_total"))
}

func TestTheDaemonFailsEveryBadInputWithAReasonAndServesTheGoodOnes(t *testing.T) {
	e := startDaemon(t, destination.Config{Destination: config.Destination{URL: filepath.Join(t.TempDir(), "out")}}, func(o *daemon.Options) { o.ConcurrentJobs = 1 })
	var ids []string
	for i, tc := range badCases() {
		id := fmt.Sprintf("bad_%02d", i)
		a := newAcquisition(id, "uint16", []dimSpec{{4, 2, 1}, {6, 3, 2}, {8, 8, 1}})
		a.randomRaw(3, 4*6*8)
		if tc.edit != nil {
			tc.edit(a)
		}
		if tc.name == "data in a subdirectory" || tc.name == "data reaching out with dot dot" {
			a.manifest["data"] = strings.ReplaceAll(a.manifest["data"].(string), "bad", id)
		}
		dir := t.TempDir() // stage beside, then move into the spool in order
		a.write(t, dir)
		if tc.after != nil {
			tc.after(t, dir, a)
		}
		if tc.name != "a missing raw file" {
			mustMove(t, dir, e.opt.SpoolDir, id+".raw")
		}
		mustMove(t, dir, e.opt.SpoolDir, id+".json")
		ids = append(ids, id)
		good := newAcquisition(fmt.Sprintf("good_%02d", i), "uint8", []dimSpec{{2, 1, 1}, {5, 5, 1}})
		good.randomRaw(uint64(i), 10)
		e.drop(good)
	}
	// A FIFO named like a raw file: not a regular file.
	fifo := newAcquisition("fifo", "uint8", []dimSpec{{2, 1, 1}})
	must(t, mkfifo(filepath.Join(e.opt.SpoolDir, "fifo.raw")))
	b, _ := json.Marshal(fifo.manifest)
	must(t, os.WriteFile(filepath.Join(e.opt.SpoolDir, "fifo.json"), b, 0o644))
	ids = append(ids, "fifo")
	for i, id := range ids {
		e.waitFor(id+" in failed/", func() bool { _, ok := e.failedReport(id); return ok })
		rep, _ := e.failedReport(id)
		if reason, _ := rep["reason"].(string); reason == "" || rep["zspool_version"] != "test" || rep["time"] == nil {
			t.Errorf("%s: report %v lacks a reason, time or version", id, rep)
		}
		if i < len(badCases()) {
			if want := badCases()[i].want; !strings.Contains(fmt.Sprint(rep["reason"]), want) {
				t.Errorf("%s (%s): reason %q lacks %q", id, badCases()[i].name, rep["reason"], want)
			}
		}
	}
	for i := range badCases() {
		id := fmt.Sprintf("good_%02d", i)
		e.waitFor(id+" archived", func() bool { return e.archived(id) })
	}
}

func mustMove(t *testing.T, from, to, name string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(from, name)); err != nil {
		return
	}
	must(t, os.Rename(filepath.Join(from, name), filepath.Join(to, name)))
}

// switchProxy forwards TCP to a backend and can be taken down: while down
// its port refuses connections, as a stopped server's would.
type switchProxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]bool
}

func newSwitchProxy(t *testing.T, target string) *switchProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{addr: ln.Addr().String(), target: target, conns: map[net.Conn]bool{}}
	p.serve(ln)
	t.Cleanup(p.down)
	return p
}

func (p *switchProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

func (p *switchProxy) pipe(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[u] = true, true
	p.mu.Unlock()
	go func() { io.Copy(u, c); u.Close() }()
	io.Copy(c, u)
	c.Close()
}

func (p *switchProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

func (p *switchProxy) up(t *testing.T) {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("re-listen %s: %v", p.addr, err)
	}
	p.serve(ln)
}

var _ = zarr.ErrNotFound

func optionsFor(spool, state string) daemon.Options {
	return daemon.Options{SpoolDir: spool, StateDir: state}
}

func TestConfigCheckPrintsTheEffectiveConfigAndProbesTheDestination(t *testing.T) {
	b := startBackend(t, s3test.StartMinIO)
	base := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(base, "spool"), 0o755))
	write := func(bucket string) string {
		p := filepath.Join(base, bucket+".yaml")
		writeFile(t, p, fmt.Sprintf("spool_dir: %s\nstate_dir: %s\ndestination:\n  url: s3://%s/x\n  endpoint: %s\n  path_style: true\n  credentials_file: %s\n",
			filepath.Join(base, "spool"), filepath.Join(base, "state"), bucket, b.srv.Endpoint, b.creds))
		return p
	}
	out, _, err := zspool(t, "config", "check", write(testBucket))
	if err != nil || !strings.Contains(out, "memory_budget: "+config.DefaultMemoryBudget().String()) || !strings.Contains(out, "bucket and credentials ok") {
		t.Fatalf("check of a good config: %v\n%s", err, out)
	}
	_, _, err = zspool(t, "config", "check", write("missing-bucket"))
	if err == nil || !strings.Contains(err.Error(), `bucket "missing-bucket" does not exist`) {
		t.Fatalf("check with a missing bucket: %v", err)
	}
	writeFile(t, filepath.Join(base, "bad.yaml"), "spool_dir: relative\nstate_dir: /x\ndestination: {url: /out}\nbogus: 1\n")
	_, _, err = zspool(t, "config", "check", filepath.Join(base, "bad.yaml"))
	if err == nil || !strings.Contains(err.Error(), "spool_dir") || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("check of a bad config: %v", err)
	}
}
