package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/daemon"
	"github.com/zspool/zspool/destination"
	"github.com/zspool/zspool/internal/s3test"
)

// Operating zspool (issue 20): notifications, the jobs view, requeue,
// dry runs and exit codes.

// receiver is a webhook endpoint on loopback that keeps what it is sent.
type receiver struct {
	mu     sync.Mutex
	bodies []daemon.Outcome
	url    string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var o daemon.Outcome
		if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &o) != nil {
			http.Error(w, "want a JSON POST", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, o)
		r.mu.Unlock()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	r.url = "http://" + ln.Addr().String() + "/hooks/zspool?token=hunter2"
	return r
}

func (r *receiver) events(event string) []daemon.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []daemon.Outcome
	for _, o := range r.bodies {
		if o.Event == event {
			out = append(out, o)
		}
	}
	return out
}

func TestWebhooksJobsAndRequeueTakeAFailedAcquisitionToStored(t *testing.T) {
	recv := newReceiver(t)
	execLog := filepath.Join(t.TempDir(), "exec.log")
	out := filepath.Join(t.TempDir(), "out")
	e := startDaemon(t, destination.Config{Destination: config.Destination{URL: out}}, func(o *daemon.Options) {
		o.Settle = 0
		o.Announce = daemon.AnnounceOptions{Webhook: recv.url, Exec: []string{"/bin/sh", "-c", "cat >> " + execLog + "; echo >> " + execLog},
			Queue: 10, Timeout: 5 * time.Second}
	})
	cfg := filepath.Join(t.TempDir(), "zspool.yaml")
	writeFile(t, cfg, fmt.Sprintf("spool_dir: %s\nstate_dir: %s\ndestination: {url: %s}\nmetrics: {listen: %q}\n",
		e.opt.SpoolDir, e.opt.StateDir, out, e.d.MetricsAddr().String()))

	good := []*acquisition{}
	for i, name := range []string{"good_a", "good_b"} {
		a := newAcquisition(name, "uint16", []dimSpec{{4, 1, 2}, {32, 16, 2}, {32, 16, 2}})
		a.randomRaw(uint64(i), 4*32*32)
		e.drop(a)
		good = append(good, a)
	}
	bad := newAcquisition("bad_c", "uint16", []dimSpec{{4, 1, 2}, {32, 16, 2}, {32, 16, 2}})
	bad.randomRaw(9, 4*32*32)
	full := bad.raw
	bad.raw = full[:len(full)-100] // truncated
	e.drop(bad)

	e.waitFor("two stored and one failed webhook", func() bool { return len(recv.events("stored")) == 2 && len(recv.events("failed")) == 1 })
	for _, o := range recv.events("stored") {
		if o.URI != filepath.Join(out, o.Dataset+".ome.zarr") || o.BytesIn != 4*32*32*2 || o.BytesOut <= 0 || o.Ratio <= 0 || o.Seconds <= 0 || o.Manifest != o.Job+".json" {
			t.Errorf("stored body lacks a field: %+v", o)
		}
	}
	f := recv.events("failed")[0]
	if f.Job != "bad_c" || !strings.Contains(f.Error, "truncated") || f.Kept == "" {
		t.Errorf("failed body: %+v", f)
	}
	e.waitFor("the exec notifications", func() bool {
		b, _ := os.ReadFile(execLog)
		return strings.Count(string(b), `"event":`) == 3
	})

	// zspool jobs, from the running daemon.
	stdout, stderr, err := zspool(t, "jobs", "--config", cfg)
	if err != nil {
		t.Fatalf("jobs: %v\n%s", err, stderr)
	}
	for _, want := range []string{"# from the running daemon", "stored  good_a", "stored  good_b", "failed  bad_c", "truncated", "zspool requeue bad_c"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("jobs output lacks %q:\n%s", want, stdout)
		}
	}

	// Fix the raw file where the failure left it, and requeue.
	must(t, os.WriteFile(filepath.Join(e.opt.StateDir, "failed", "bad_c", "bad_c.raw"), full, 0o644))
	if stdout, stderr, err := zspool(t, "requeue", "--config", cfg, "bad_c"); err != nil || !strings.Contains(stdout, "bad_c: back in") {
		t.Fatalf("requeue: %v\n%s%s", err, stdout, stderr)
	}
	e.waitFor("the requeued acquisition stored", func() bool { return len(recv.events("stored")) == 3 })
	if _, err := os.Stat(filepath.Join(out, "bad_c.ome.zarr", "zarr.json")); err != nil {
		t.Fatalf("no third dataset: %v", err)
	}
	if _, _, err := zspool(t, "verify", filepath.Join(out, "bad_c.ome.zarr"), "--raw", filepath.Join(e.opt.StateDir, "archive", "bad_c", "bad_c.raw")); err != nil {
		t.Fatalf("verify the requeued dataset: %v", err)
	}

	// And from the journal once the daemon is stopped.
	e.stop()
	stdout, stderr, err = zspool(t, "jobs", "--config", cfg)
	if err != nil {
		t.Fatalf("jobs (stopped): %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "journal (the daemon is not running)") || strings.Count(stdout, "\nstored ") != 3 {
		t.Errorf("jobs from the journal:\n%s", stdout)
	}
	if strings.Contains(stdout+stderr, "hunter2") {
		t.Error("the webhook's token reached the output")
	}
}

func TestConvertDryRunWritesNothingAndExitCodesTellInputFromTransient(t *testing.T) {
	dir := t.TempDir()
	a := newAcquisition("dry", "uint16", []dimSpec{{6, 2, 2}, {40, 16, 2}, {40, 16, 2}})
	a.randomRaw(4, 6*40*40)
	a.manifest["multiscale"] = map[string]any{"method": "mean"}
	for d, n := range []string{"t", "y", "x"} {
		dims(a)[d]["name"] = n
	}
	mp := a.write(t, dir)
	out := filepath.Join(dir, "out")
	stdout, stderr, err := zspool(t, "convert", mp, "--dest", out, "--dry-run")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, stderr)
	}
	for _, want := range []string{"dry run: nothing is written", "level 0", "level 1", "objects:", "memory:", "engine:", "no dataset dry.ome.zarr there yet"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, stdout)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("the dry run created the destination")
	}

	exitCode := func(err error) int {
		var ee *exitError
		if err == nil {
			return 0
		}
		if !errors.As(err, &ee) {
			return 1
		}
		return ee.code
	}
	bad := newAcquisition("badm", "uint16", []dimSpec{{2, 1, 1}, {8, 8, 1}})
	bad.randomRaw(1, 15) // a frame short
	if _, _, err := zspool(t, "convert", bad.write(t, dir), "--dest", out, "--quiet"); exitCode(err) != 1 {
		t.Errorf("bad input: exit %d (%v), want 1", exitCode(err), err)
	}
	// A port nothing listens on: the destination is unreachable.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := ln.Addr().String()
	ln.Close()
	creds := filepath.Join(dir, "creds")
	writeFile(t, creds, "[default]\naws_access_key_id = a\naws_secret_access_key = b\n")
	_, _, err = zspool(t, "convert", mp, "--dest", "s3://bucket/p", "--endpoint", "http://"+addr, "--path-style", "--credentials-file", creds, "--max-attempts", "1", "--quiet")
	if exitCode(err) != 3 {
		t.Errorf("unreachable endpoint: exit %d (%v), want 3", exitCode(err), err)
	}
	if _, _, err := zspool(t, "convert", mp, "--dest", out, "--quiet", "--storage-class", "STANDARD"); exitCode(err) != 2 {
		t.Errorf("an S3 option on a local destination: exit %d (%v), want 2", exitCode(err), err)
	}
}

func TestStorageClassAndTagsReachEveryObjectOnMinIO(t *testing.T) {
	b := startBackend(t, s3test.StartMinIO)
	dir := t.TempDir()
	// Shards over a part (multipart) and documents (PutObject) both.
	a := newAcquisition("opts", "uint16", []dimSpec{{4, 2, 2}, {1024, 512, 2}, {1024, 512, 2}})
	a.randomRaw(8, 4*1024*1024)
	args := append([]string{"convert", a.write(t, dir), "--dest", "s3://" + testBucket + "/opts", "--part-size", "5MiB",
		"--storage-class", "REDUCED_REDUNDANCY", "--tag", "project=scope-3", "--tag", "stage=raw"}, b.flags(b.srv.Endpoint)...)
	if _, stderr, err := zspool(t, args...); err != nil {
		t.Fatalf("convert: %v\n%s", err, stderr)
	}
	keys, err := b.sink(t, "opts").List(t.Context(), "opts.ome.zarr")
	must(t, err)
	if len(keys) < 3 {
		t.Fatalf("objects: %v", keys)
	}
	for _, k := range keys {
		target := "/" + testBucket + "/opts/" + k
		head, err := b.srv.Do(t.Context(), http.MethodHead, target, nil, nil)
		must(t, err)
		if got := head.Header.Get("X-Amz-Storage-Class"); got != "REDUCED_REDUNDANCY" {
			t.Errorf("%s: storage class %q, want REDUCED_REDUNDANCY", k, got)
		}
		tags, err := b.srv.Do(t.Context(), http.MethodGet, target+"?tagging", nil, nil)
		must(t, err)
		for _, want := range []string{"<Key>project</Key><Value>scope-3</Value>", "<Key>stage</Key><Value>raw</Value>"} {
			if !strings.Contains(string(tags.Body), want) {
				t.Errorf("%s: tags %s lack %s", k, tags.Body, want)
			}
		}
	}
}

func TestServerSideEncryptionReachesEveryObjectOnMinIO(t *testing.T) {
	b := startBackend(t, s3test.StartMinIO)
	dir := t.TempDir()
	a := newAcquisition("sse", "uint16", []dimSpec{{4, 2, 2}, {1024, 512, 2}, {1024, 512, 2}})
	a.randomRaw(9, 4*1024*1024)
	for _, c := range []struct{ prefix, mode, kms, want string }{
		{"sse-s3", "AES256", "", "AES256"},
		{"sse-kms", "aws:kms", "zspool-test-key", "aws:kms"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			args := append([]string{"convert", a.write(t, dir), "--dest", "s3://" + testBucket + "/" + c.prefix, "--part-size", "5MiB", "--sse", c.mode}, b.flags(b.srv.Endpoint)...)
			if c.kms != "" {
				args = append(args, "--sse-kms-key-id", c.kms)
			}
			if _, stderr, err := zspool(t, args...); err != nil {
				t.Fatalf("convert: %v\n%s", err, stderr)
			}
			keys, err := b.sink(t, c.prefix).List(t.Context(), "sse.ome.zarr")
			must(t, err)
			for _, k := range keys {
				head, err := b.srv.Do(t.Context(), http.MethodHead, "/"+testBucket+"/"+c.prefix+"/"+k, nil, nil)
				must(t, err)
				if got := head.Header.Get("X-Amz-Server-Side-Encryption"); got != c.want {
					t.Errorf("%s: server-side encryption %q, want %q", k, got, c.want)
				}
			}
			verify := append([]string{"verify", "s3://" + testBucket + "/" + c.prefix + "/sse.ome.zarr", "--raw", filepath.Join(dir, "sse.raw")}, b.flags(b.srv.Endpoint)...)
			if _, stderr, err := zspool(t, verify...); err != nil {
				t.Fatalf("verify: %v\n%s", err, stderr)
			}
		})
	}
}
