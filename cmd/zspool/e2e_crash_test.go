package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/zspool/zspool/internal/faultproxy"
	"github.com/zspool/zspool/internal/s3test"
	"github.com/zspool/zspool/zarr"
)

// daemonProc runs `zspool run` as a real process (this test binary,
// re-executed as the command).
func daemonProc(t *testing.T, cfg, logPath string) *exec.Cmd {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "run", "--config", cfg)
	cmd.Env = append(os.Environ(), "ZSPOOL_TEST_AS_ZSPOOL=1", "AWS_EC2_METADATA_DISABLED=true")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		logf.Close()
	})
	return cmd
}

// logEvents reads a daemon's JSON log lines.
func logEvents(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			evs = append(evs, ev)
		}
	}
	return evs
}

func TestSIGKILLAtTwentyFiveMomentsLosesNothingAndRedoesAtMostOneLayerPerRestart(t *testing.T) {
	t.Parallel() // mostly waiting (kills, an outage): overlaps with the other slow ones
	if testing.Short() {
		t.Skip("-short: the crash test runs the daemon 26 times")
	}
	b := startBackend(t, s3test.StartMinIO)
	_, _ = crashAndResume(t, b, b.srv.Endpoint, 25, 400*time.Millisecond)
}

// TestSIGKILLDuringOverlappingLayerCommits kills the daemon while one shard
// layer commits and the next is being written: every CompleteMultipartUpload
// is held back, so a layer's commit is in flight for most of the next
// layer's writes, and the kills land in that overlap.
func TestSIGKILLDuringOverlappingLayerCommitsLosesNothingAndRedoesAtMostOneLayer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the crash test runs the daemon 13 times")
	}
	b := startBackend(t, s3test.StartMinIO)
	proxy, err := faultproxy.New(b.srv.Endpoint, 29,
		faultproxy.Rule{Op: "CompleteMultipartUpload", Fraction: 1, Faults: []faultproxy.Fault{faultproxy.Delay}, Delay: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	logs, settled := crashAndResume(t, b, proxy.URL(), 12, 900*time.Millisecond)
	// Held-back completes leave sealed shards at most kills, for the next
	// start to finish (s3sink's and the assembler's tests check that path
	// on purpose; here it is luck of the timing, so it is reported).
	t.Logf("%d restarts finished sealed shards", settled)
	// The plans the daemon logged must overlap commits and writes, or this
	// test would prove nothing new.
	plans := 0
	for _, lp := range logs {
		for _, ev := range logEvents(t, lp) {
			if ev["msg"] == "plan" {
				plans++
				if n, _ := ev["layers_in_flight"].(float64); n < 2 {
					t.Fatalf("the daemon planned %v shard layers in flight: no overlap to kill into", ev["layers_in_flight"])
				}
			}
		}
	}
	if plans == 0 {
		t.Fatal("no run logged its plan")
	}
}

// crashAndResume drops one acquisition of 64 shard layers, SIGKILLs the
// daemon kills times at random moments up to sleepMax after each start,
// then lets a last run finish, and checks: the raw file is always in one
// place, no group document ever stands over incomplete data, the stored
// objects equal an uninterrupted conversion's, no multipart upload is left,
// and no run redoes a layer an earlier run logged as stored. It returns
// the runs' log files and how many restarts finished sealed shards.
func crashAndResume(t *testing.T, b *backend, endpoint string, kills int, sleepMax time.Duration) (logs []string, settled int) {
	t.Helper()
	base := t.TempDir()
	spool, state := filepath.Join(base, "spool"), filepath.Join(base, "state")
	must(t, os.MkdirAll(spool, 0o755))
	// 64 shard layers of one 6 MiB shard each (two parts: multipart uploads
	// for the crashes to cut through).
	const frames, side = 192, 1024
	a := newAcquisition("crash", "uint16", []dimSpec{{frames, 1, 3}, {side, 256, 4}, {side, 256, 4}})
	a.randomRaw(77, frames*side*side)
	layers := int64(frames / 3)

	// The reference: the same input converted without interruption.
	ref, refSpool := t.TempDir(), t.TempDir()
	if _, stderr, err := zspool(t, "convert", a.write(t, refSpool), "--dest", ref, "--quiet"); err != nil {
		t.Fatalf("reference convert: %v\n%s", err, stderr)
	}

	cfg := filepath.Join(base, "zspool.yaml")
	writeFile(t, cfg, fmt.Sprintf(`spool_dir: %s
state_dir: %s
destination:
  url: s3://%s/crash
  endpoint: %s
  path_style: true
  credentials_file: %s
  part_size: 5MiB
concurrent_jobs: 1
settle: 0s
rescan_interval: 1s
shutdown_timeout: 10s
retry: {max_attempts: 3, max_backoff: 100ms, job_backoff: 100ms, job_max_backoff: 1s}
metrics: {listen: "off"}
log_level: debug
`, spool, state, testBucket, endpoint, b.creds))
	(&daemonEnv{t: t, opt: optionsFor(spool, state)}).drop(a)

	rawIn := func() []string { // every place the raw file may be
		var at []string
		for _, p := range []string{filepath.Join(spool, "crash.raw"), filepath.Join(state, "jobs", "crash", "crash.raw"), filepath.Join(state, "archive", "crash", "crash.raw")} {
			if fi, err := os.Stat(p); err == nil && fi.Size() == int64(len(a.raw)) {
				at = append(at, p)
			}
		}
		return at
	}
	s := b.sink(t, "crash")
	rng := rand.New(rand.NewPCG(2026, 11))
	for done := 0; done < kills; {
		lp := filepath.Join(base, fmt.Sprintf("run%02d.log", len(logs)))
		logs = append(logs, lp)
		cmd := daemonProc(t, cfg, lp)
		time.Sleep(time.Duration(rng.Int64N(int64(sleepMax))))
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		done++
		at := rawIn()
		if len(at) != 1 {
			t.Fatalf("after kill %d the raw file is in %d places: %v", done, len(at), at)
		}
		if filepath.Base(filepath.Dir(filepath.Dir(at[0]))) == "archive" {
			t.Fatalf("the job finished after %d kills: make the acquisition longer", done)
		}
		// A group document may only exist over complete data.
		if ds, err := zarr.Open(context.Background(), s, "crash.ome.zarr"); err == nil {
			f, _ := os.Open(at[0])
			_, verr := zarr.Verify(context.Background(), ds, f, nil)
			f.Close()
			if verr != nil {
				t.Fatalf("after kill %d a group zarr.json stands over incomplete data: %v", done, verr)
			}
		}
	}
	// A last run finishes the job; SIGTERM then stops it cleanly.
	lp := filepath.Join(base, "final.log")
	logs = append(logs, lp)
	cmd := daemonProc(t, cfg, lp)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if at := rawIn(); len(at) == 1 && filepath.Base(filepath.Dir(filepath.Dir(at[0]))) == "archive" {
			if entries, _ := os.ReadDir(filepath.Join(state, "jobs")); len(entries) == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the job did not finish after the last restart")
		}
		time.Sleep(50 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("SIGTERM: exit %v, want 0", err)
	}

	n := sameObjects(t, ref, s, "crash.ome.zarr")
	if ups, err := s.PendingUploads(context.Background(), ""); err != nil || len(ups) != 0 {
		t.Fatalf("multipart uploads left: %v %v", ups, err)
	}
	// Rework: every run resumes past every layer an earlier run logged as
	// stored (or whose sealed shards its start finished), so only the
	// layer in flight at a kill is ever done again.
	var storedMax int64 = -1
	var stored, aborted int
	for i, lp := range logs {
		runMax := storedMax
		for _, ev := range logEvents(t, lp) {
			switch ev["msg"] {
			case "job resumed":
				if r := int64(ev["layer"].(float64)); r < storedMax+1 {
					t.Fatalf("run %d resumed at layer %d although layer %d was stored: a committed layer redone", i, r, storedMax)
				}
			case "shard layer stored":
				stored++
				runMax = max(runMax, int64(ev["layer"].(float64)))
			case "finished the shards sealed before the restart":
				// Layers the crash left sealed, now visible, count once.
				if done := int64(ev["layers_done"].(float64)); done-1 > runMax {
					stored += int(done - 1 - runMax)
					runMax = done - 1
				}
				if n := ev["shards"].(float64); n > 0 {
					settled++
				}
			case "aborted a stale multipart upload":
				aborted++
			}
		}
		storedMax = runMax
	}
	if storedMax != layers-1 {
		t.Fatalf("logs show layers up to %d stored, want %d", storedMax, layers-1)
	}
	t.Logf("%d kills, %d runs: %d objects identical to an uninterrupted run; %d layer commits for %d layers (rework %d ≤ %d restarts); %d restarts finished sealed shards; %d stale uploads aborted",
		kills, len(logs), n, stored, layers, stored-int(layers), kills, settled, aborted)
	if stored-int(layers) > kills {
		t.Fatalf("rework of %d layers over %d restarts", stored-int(layers), kills)
	}
	return logs, settled
}
