package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zspool/zspool/daemon"
	"github.com/zspool/zspool/internal/faultproxy"
	"github.com/zspool/zspool/internal/s3test"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zarr"
)

// Issue 15's reproductions that need a real S3 server, and its acceptance
// run: random SIGKILLs and an outage, after which no multipart upload may
// remain and every dataset must verify.

// outageLength is how long the outage tests keep the destination away:
// by default longer than the SDK's retries as these tests configure them
// (3 attempts, 50 ms backoff), so the job itself has to fail and retry;
// ZSPOOL_OUTAGE=180s gives the full three minutes.
func outageLength(t *testing.T, def time.Duration) time.Duration {
	if v := os.Getenv("ZSPOOL_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("ZSPOOL_OUTAGE: %v", err)
		}
		return d
	}
	return def
}

func TestAnUploadCreatedJustBeforeAKillIsAbortedAtTheNextStart(t *testing.T) {
	b := startBackend(t, s3test.StartMinIO)
	base := t.TempDir()
	state := filepath.Join(base, "state")
	must(t, os.MkdirAll(state, 0o750))
	j, err := daemon.OpenJournal(filepath.Join(state, "journal.db"))
	must(t, err)
	// What a daemon killed right after CreateMultipartUpload leaves: the
	// intent it journaled first, and an upload whose id it never wrote.
	s := b.sink(t, "intent")
	s.TrackUploads(pipeline.UploadHooks{Before: func(key string) error { return j.AddUpload(daemon.Upload{Key: key, Job: "killed"}) }})
	w, err := s.Create(context.Background(), "killed.ome.zarr/0/c/0/0/0")
	must(t, err)
	_, err = w.Write(make([]byte, 20<<20)) // more than a part (16 MiB by default): the upload starts
	must(t, err)
	j.Close()
	if ups, _ := s.PendingUploads(context.Background(), ""); len(ups) != 1 {
		t.Fatalf("%d uploads open before the restart, want the killed one", len(ups))
	}
	e := startDaemon(t, b.spec(b.srv.Endpoint, "intent"), func(o *daemon.Options) { o.StateDir = state })
	e.waitFor("the killed upload aborted", func() bool {
		ups, err := s.PendingUploads(context.Background(), "")
		return err == nil && len(ups) == 0
	})
}

func TestAJobOutlastingItsRetriesAbortsItsUploadsAndCompletes(t *testing.T) {
	t.Parallel() // mostly waiting (kills, an outage): overlaps with the other slow ones
	b := startBackend(t, s3test.StartMinIO)
	// The outage: every part upload, abort and listing fails (as during a
	// 403 credential rotation, or a network cut that lets the first
	// request of each upload through), for longer than the SDK retries.
	// Each attempt of the job then opens an upload it cannot abort.
	proxy, err := faultproxy.New(b.srv.Endpoint, 15)
	must(t, err)
	t.Cleanup(func() { proxy.Close() })
	e := startDaemon(t, b.spec(proxy.URL(), "outage"), func(o *daemon.Options) { o.ConcurrentJobs = 1 })
	a := newAcquisition("outage", "uint16", []dimSpec{{64, 4, 1}, {1024, 256, 4}, {1024, 256, 4}}) // 8 MiB shards: two 5 MiB parts
	a.randomRaw(42, 64*1024*1024)
	e.drop(a)
	e.waitFor("the first shard layer", func() bool { return e.metric("zspool_shard_layers_total") >= 1 })
	fail := []faultproxy.Fault{faultproxy.Status500}
	must(t, proxy.SetRules(
		faultproxy.Rule{Op: "UploadPart", Fraction: 1, Faults: fail},
		faultproxy.Rule{Op: "AbortMultipartUpload", Fraction: 1, Faults: fail},
		faultproxy.Rule{Op: "ListMultipartUploads", Fraction: 1, Faults: fail}))
	downAt := time.Now()
	outage := outageLength(t, 5*time.Second)
	e.waitFor("the job to retry twice", func() bool { return e.metric("zspool_job_retries_total") >= 2 })
	for time.Since(downAt) < outage {
		if _, failed := e.failedReport("outage"); failed || e.archived("outage") {
			t.Fatal("the job ended while the destination was failing")
		}
		time.Sleep(200 * time.Millisecond)
	}
	leftDuring, _ := b.sink(t, "").PendingUploads(context.Background(), "")
	must(t, proxy.SetRules())
	e.waitFor("the job to complete", func() bool { return e.archived("outage") })
	if _, failed := e.failedReport("outage"); failed {
		t.Fatal("an outage quarantined the job")
	}
	if len(leftDuring) == 0 {
		t.Fatal("no upload was open during the outage: the test did not reproduce the leak")
	}
	if ups, err := b.sink(t, "").PendingUploads(context.Background(), ""); err != nil || len(ups) != 0 {
		t.Fatalf("%d multipart uploads left on the bucket after the outage (%v): %v", len(ups), err, ups)
	}
	args := append([]string{"verify", "s3://" + testBucket + "/outage/outage.ome.zarr", "--raw", filepath.Join(e.opt.StateDir, "archive", "outage", "outage.raw")}, b.flags(b.srv.Endpoint)...)
	if out, stderr, err := zspool(t, args...); err != nil {
		t.Fatalf("verify: %v\n%s%s", err, out, stderr)
	}
	t.Logf("outage of %v: %d uploads open during it, all aborted after; %v job retries, %v request retries",
		outage, len(leftDuring), e.metric("zspool_job_retries_total"), e.metric("zspool_upload_retries_total"))
}

func TestSixtyKillsAndAnOutageLeaveNoUploadAndEveryDatasetVerifies(t *testing.T) {
	t.Parallel() // mostly waiting (kills, an outage): overlaps with the other slow ones
	if testing.Short() {
		t.Skip("-short: this test runs the daemon 62 times")
	}
	b := startBackend(t, s3test.StartMinIO)
	proxy := newSwitchProxy(t, strings.TrimPrefix(b.srv.Endpoint, "http://"))
	base := t.TempDir()
	spool, state := filepath.Join(base, "spool"), filepath.Join(base, "state")
	must(t, os.MkdirAll(spool, 0o755))
	cfg := filepath.Join(base, "zspool.yaml")
	writeFile(t, cfg, fmt.Sprintf(`spool_dir: %s
state_dir: %s
destination:
  url: s3://%s/kills
  endpoint: http://%s
  path_style: true
  credentials_file: %s
  part_size: 5MiB
concurrent_jobs: 2
settle: 0s
rescan_interval: 1s
shutdown_timeout: 10s
release: {policy: delete}
retry: {max_attempts: 3, max_backoff: 100ms, job_backoff: 100ms, job_max_backoff: 1s}
metrics: {listen: "off"}
`, spool, state, testBucket, proxy.addr, b.creds))
	// Three acquisitions of 16 layers, one 6 MiB shard (two parts) each.
	env := &daemonEnv{t: t, opt: optionsFor(spool, state)}
	raws := map[string][]byte{}
	for i, name := range []string{"k1", "k2", "k3"} {
		a := newAcquisition(name, "uint16", []dimSpec{{48, 1, 3}, {1024, 256, 4}, {1024, 256, 4}})
		a.randomRaw(uint64(100+i), 48*1024*1024)
		env.drop(a)
		raws[name] = a.raw
	}
	rng := rand.New(rand.NewPCG(2026, 15))
	outage := outageLength(t, 15*time.Second)
	const kills = 60
	verified := map[string]bool{}
	for k := range kills {
		cmd := daemonProc(t, cfg, filepath.Join(base, fmt.Sprintf("run%02d.log", k)))
		if k == kills/2 {
			// The outage: the daemon runs through it, then is killed
			// soon after the destination is back.
			proxy.down()
			time.Sleep(outage)
			proxy.up(t)
		}
		time.Sleep(time.Duration(rng.IntN(600)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL) // it may have exited: a start during the outage fails its probe
		_ = cmd.Wait()
		// With release.policy delete, a raw file may only be gone once
		// its dataset verifies.
		for name, raw := range raws {
			if verified[name] || rawExists(spool, state, name) {
				continue
			}
			verifyStored(t, b, name, raw, fmt.Sprintf("after kill %d", k+1))
			verified[name] = true
		}
	}
	finalLog := filepath.Join(base, "final.log")
	cmd := daemonProc(t, cfg, finalLog)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		entries, _ := os.ReadDir(filepath.Join(state, "jobs"))
		left, _ := os.ReadDir(spool)
		running, _ := os.ReadFile(finalLog) // SIGTERM is handled once it runs
		if len(entries) == 0 && len(left) == 0 && strings.Contains(string(running), "zspool running") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the jobs did not finish after the last restart: jobs %v, spool %v", entries, left)
		}
		time.Sleep(100 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("SIGTERM: exit %v, want 0", err)
	}
	for name, raw := range raws {
		verifyStored(t, b, name, raw, "at the end")
	}
	if failed, _ := os.ReadDir(filepath.Join(state, "failed")); len(failed) != 0 {
		t.Fatalf("acquisitions failed: %v", failed)
	}
	ups, err := b.sink(t, "").PendingUploads(context.Background(), "")
	if err != nil || len(ups) != 0 {
		t.Fatalf("%d multipart uploads left on MinIO (%v): %v", len(ups), err, ups)
	}
	t.Logf("%d kills and an outage of %v: 3 datasets verified, 0 multipart uploads left", kills, outage)
}

// rawExists reports whether an acquisition's raw file is still in the
// spool or its job directory.
func rawExists(spool, state, name string) bool {
	for _, p := range []string{filepath.Join(spool, name+".raw"), filepath.Join(state, "jobs", name, name+".raw")} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// verifyStored holds a stored dataset to the raw bytes it came from.
func verifyStored(t *testing.T, b *backend, name string, raw []byte, when string) {
	t.Helper()
	ds, err := zarr.Open(context.Background(), b.sink(t, "kills"), name+".ome.zarr")
	if err != nil {
		t.Fatalf("%s: %s's raw file is gone but its dataset does not open: %v", when, name, err)
	}
	if _, err := zarr.Verify(context.Background(), ds, bytes.NewReader(raw), nil); err != nil {
		t.Fatalf("%s: %s's raw file is gone but its dataset does not verify: %v", when, name, err)
	}
}

func TestEveryMessageOfTheDaemonIsAJSONLineItsFatalOnesToo(t *testing.T) {
	base := t.TempDir()
	spool, state := filepath.Join(base, "spool"), filepath.Join(base, "state")
	must(t, os.MkdirAll(spool, 0o755))
	bad := filepath.Join(base, "bad.yaml")
	writeFile(t, bad, "spool_dir: relative\n")
	// A journal another process holds: the start fails after the config
	// was read, from inside the daemon.
	locked := filepath.Join(base, "locked.yaml")
	writeFile(t, locked, fmt.Sprintf("spool_dir: %s\nstate_dir: %s\ndestination: {url: %s}\nmetrics: {listen: \"off\"}\n", spool, state, filepath.Join(base, "out")))
	must(t, os.MkdirAll(state, 0o750))
	j, err := daemon.OpenJournal(filepath.Join(state, "journal.db"))
	must(t, err)
	defer j.Close()
	for _, c := range []struct{ name, cfg, want string }{
		{"a config error", bad, "spool_dir"},
		{"a journal held by another process", locked, "journal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "run", "--config", c.cfg)
			cmd.Env = append(os.Environ(), "ZSPOOL_TEST_AS_ZSPOOL=1")
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("zspool run succeeded:\n%s", out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			for _, l := range lines {
				var ev map[string]any
				if json.Unmarshal([]byte(l), &ev) != nil {
					t.Fatalf("a line that is not JSON: %q\nall output:\n%s", l, out)
				}
			}
			if !strings.Contains(string(out), c.want) || !strings.Contains(string(out), `"level":"error"`) {
				t.Fatalf("no error line naming %q:\n%s", c.want, out)
			}
		})
	}
}

func TestOneSIGTERMStopsTheDaemonCleanlyEveryTime(t *testing.T) {
	// One SIGTERM reaches two listeners (main's and the daemon's); it used
	// to count as two about half the time, and the daemon exited 130 at
	// once instead of finishing its shard layer and exiting 0.
	base := t.TempDir()
	spool, state := filepath.Join(base, "spool"), filepath.Join(base, "state")
	must(t, os.MkdirAll(spool, 0o755))
	cfg := filepath.Join(base, "zspool.yaml")
	writeFile(t, cfg, fmt.Sprintf("spool_dir: %s\nstate_dir: %s\ndestination: {url: %s}\nmetrics: {listen: \"off\"}\n",
		spool, state, filepath.Join(base, "out")))
	for i := range 12 {
		lp := filepath.Join(base, fmt.Sprintf("run%02d.log", i))
		cmd := daemonProc(t, cfg, lp)
		deadline := time.Now().Add(time.Minute)
		for {
			if b, _ := os.ReadFile(lp); strings.Contains(string(b), "zspool running") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d did not start", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
		must(t, cmd.Process.Signal(syscall.SIGTERM))
		if err := cmd.Wait(); err != nil {
			b, _ := os.ReadFile(lp)
			t.Fatalf("run %d: one SIGTERM gave %v, want exit 0\n%s", i, err, b)
		}
	}
}
