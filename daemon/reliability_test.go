package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/zspool/zspool/destination"
	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/zarr"
)

// The reproductions of issue 15's defects that need no S3 server. Each
// one failed (or hung, bounded by its waits) before the fix.

// startOrFail starts the daemon and fails fast if Run returns instead of
// becoming ready: a recovery that gives up must show as an error here.
func (h *harness) startOrFail() {
	h.t.Helper()
	log := zaptest.NewLogger(h.t, zaptest.Level(zap.InfoLevel))
	d, err := New(context.Background(), log, h.opt)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.d, h.cancel, h.done = d, cancel, make(chan error, 1)
	go func() { h.done <- d.Run(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for !d.ready.Load() {
		select {
		case err := <-h.done:
			h.t.Fatalf("the daemon stopped instead of starting: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			h.t.Fatal("the daemon did not become ready within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopWithin stops the daemon and fails if it does not return in time
// (a hung main loop ignores cancellation).
func (h *harness) stopWithin(d time.Duration) {
	h.t.Helper()
	h.cancel()
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Fatalf("Run: %v", err)
		}
	case <-time.After(d):
		h.t.Fatalf("the daemon did not stop within %v", d)
	}
}

func reason(rep map[string]any) string { return fmt.Sprint(rep["reason"]) }

func TestAFIFONamedLikeAManifestIsQuarantinedWithoutHangingTheDaemon(t *testing.T) {
	h := newHarness(t, destination.Config{}, func(o *Options) { o.Settle = 0 })
	must(t, syscall.Mkfifo(filepath.Join(h.opt.SpoolDir, "fifo.json"), 0o644))
	must(t, syscall.Mkfifo(filepath.Join(h.opt.SpoolDir, "target.fifo"), 0o644))
	must(t, os.Symlink("target.fifo", filepath.Join(h.opt.SpoolDir, "linked.json")))
	h.startOrFail()
	h.drop("good", 3, 16, 16, nil)
	h.waitFor("good archived", func() bool { return h.archived("good") })
	for id, want := range map[string]string{"fifo": "not a regular file", "linked": "symlink"} {
		h.waitFor(id+" failed", func() bool { _, ok := h.failed(id); return ok })
		if rep, _ := h.failed(id); !strings.Contains(reason(rep), want) {
			t.Errorf("%s: reason %q, want it to say %q", id, reason(rep), want)
		}
	}
	h.stopWithin(10 * time.Second)
}

func TestAnAcquisitionWithdrawnBeforeItsClaimIsForgottenAndTheDaemonRestarts(t *testing.T) {
	h := newHarness(t, destination.Config{}, func(o *Options) { o.Settle = 0 })
	d, err := New(context.Background(), zaptest.NewLogger(t), h.opt)
	must(t, err)
	h.drop("gone", 2, 8, 8, nil)
	// Queued, then withdrawn: the raw file disappears before the claim.
	must(t, os.Remove(filepath.Join(h.opt.SpoolDir, "gone.raw")))
	if err := d.claim(d.log, item{id: "gone", manifest: "gone.json", data: "gone.raw", name: "gone"}); err == nil {
		t.Fatal("a claim of a withdrawn acquisition succeeded")
	}
	if _, err := d.journal.Get("gone"); err != ErrNoJob {
		t.Fatalf("the journal still holds the job after the claim failed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.opt.SpoolDir, "gone.json")); err != nil {
		t.Fatalf("the manifest is no longer in the spool: %v", err)
	}
	// A crash mid-claim with the raw file withdrawn: the journal says
	// claiming, the files are not where it expects them.
	must(t, d.journal.Put(&Job{ID: "gone", State: StateClaiming, Manifest: "gone.json", Data: "gone.raw", Name: "gone"}))
	d.journal.Close()
	h.startOrFail()
	h.waitFor("the withdrawn acquisition reported", func() bool { _, ok := h.failed("gone"); return ok })
	if rep, _ := h.failed("gone"); !strings.Contains(reason(rep), "does not exist") {
		t.Errorf("reason %q, want it to say the raw file does not exist", reason(rep))
	}
	h.drop("after", 2, 8, 8, nil)
	h.waitFor("the next acquisition archived", func() bool { return h.archived("after") })
	h.stopWithin(10 * time.Second)
}

func TestTwoManifestsNamingOneRawFileServeTheFirstAndReportTheSecond(t *testing.T) {
	h := newHarness(t, destination.Config{}, func(o *Options) { o.Settle = 0 })
	raw := h.drop("first", 3, 16, 16, func(m map[string]any) { m["data"] = "shared.raw" })
	// drop wrote first.raw; the manifest names shared.raw.
	must(t, os.Rename(filepath.Join(h.opt.SpoolDir, "first.raw"), filepath.Join(h.opt.SpoolDir, "shared.raw")))
	second := map[string]any{"version": 1, "dtype": "uint16", "data": "shared.raw", "dimensions": []map[string]any{
		{"name": "t", "size": 3, "chunk": 1}, {"name": "y", "size": 16}, {"name": "x", "size": 16}}}
	b, _ := json.Marshal(second)
	time.Sleep(10 * time.Millisecond) // a later mtime: the second in arrival order
	must(t, os.WriteFile(filepath.Join(h.opt.SpoolDir, "second.json"), b, 0o644))
	h.startOrFail()
	h.waitFor("the first archived", func() bool {
		_, err := os.Stat(filepath.Join(h.opt.StateDir, "archive", "first", "shared.raw"))
		return err == nil
	})
	h.waitFor("the second reported", func() bool { _, ok := h.failed("second"); return ok })
	if rep, _ := h.failed("second"); !strings.Contains(reason(rep), "shared.raw") || !strings.Contains(reason(rep), "first.json") {
		t.Errorf("reason %q, want it to name the raw file and the other manifest", reason(rep))
	}
	got, err := os.ReadFile(filepath.Join(h.opt.StateDir, "archive", "first", "shared.raw"))
	if err != nil || string(got) != string(raw) {
		t.Fatalf("the shared raw file was not archived whole with the first: %v", err)
	}
	h.stopWithin(10 * time.Second)
	h.startOrFail() // and the daemon starts again
	h.stopWithin(10 * time.Second)
}

func TestARawFileStillGrowingIsClaimedOnlyAfterItHeldStillForSettle(t *testing.T) {
	h := newHarness(t, destination.Config{}, func(o *Options) { o.Settle = time.Second })
	h.startOrFail()
	const frames, side = 10, 16
	frame := make([]byte, side*side*2)
	for i := range frame {
		frame[i] = byte(i)
	}
	rawPath := filepath.Join(h.opt.SpoolDir, "growing.raw")
	f, err := os.Create(rawPath)
	must(t, err)
	_, err = f.Write(frame)
	must(t, err)
	m := map[string]any{"version": 1, "dtype": "uint16", "dimensions": []map[string]any{
		{"name": "t", "size": 0, "chunk": 1}, {"name": "y", "size": side}, {"name": "x", "size": side}}}
	b, _ := json.Marshal(m)
	must(t, os.WriteFile(filepath.Join(h.opt.SpoolDir, "growing.json"), b, 0o644))
	for range frames - 1 { // a frame every 150 ms: never still for a second
		time.Sleep(150 * time.Millisecond)
		_, err = f.Write(frame)
		must(t, err)
	}
	must(t, f.Close())
	h.waitFor("archived", func() bool { return h.archived("growing") })
	ds, err := zarr.Open(context.Background(), localfs.New(h.opt.Dest.URL), "growing.ome.zarr")
	must(t, err)
	if got := ds.Levels[0].Grid.Shape[0]; got != frames {
		t.Fatalf("the dataset holds %d frames, the acquisition wrote %d", got, frames)
	}
	h.stopWithin(10 * time.Second)
}

func TestARawFileChangedAfterItsClaimIsKeptNotReleased(t *testing.T) {
	h := newHarness(t, destination.Config{}, func(o *Options) { o.Settle = 0; o.Release = "delete" })
	d, err := New(context.Background(), zaptest.NewLogger(t), h.opt)
	must(t, err)
	h.drop("late", 2, 8, 8, nil)
	it := item{id: "late", manifest: "late.json", data: "late.raw", name: "late"}
	must(t, d.claim(d.log, it))
	// The acquisition software still had the file open and wrote it
	// again, same size, after the claim.
	raw := filepath.Join(h.opt.StateDir, "jobs", "late", "late.raw")
	must(t, os.WriteFile(raw, make([]byte, 2*8*8*2), 0o644))
	later := time.Now().Add(time.Minute)
	must(t, os.Chtimes(raw, later, later))
	d.names["late"] = "late"
	d.run(context.Background(), context.Background(), item{id: "late", manifest: "late.json", data: "late.raw", name: "late", recovered: true})
	rep, ok := h.failed("late")
	if !ok || !strings.Contains(reason(rep), "changed after it was claimed") {
		t.Fatalf("the job did not fail for its changed raw file: %v", rep)
	}
	if fi, err := os.Stat(filepath.Join(h.opt.StateDir, "failed", "late", "late.raw")); err != nil || fi.Size() != 2*8*8*2 {
		t.Fatalf("the raw file was not kept whole: %v", err)
	}
	d.journal.Close()
}

func TestASecondAcquisitionOfOneDatasetNameIsRefusedNamingBothAndTheFirstStaysIntact(t *testing.T) {
	h := newHarness(t, destination.Config{}, func(o *Options) { o.Settle = 0; o.Release = "delete" })
	h.startOrFail()
	rename := func(m map[string]any) { m["name"] = "shared_name" }
	first := h.drop("run_a", 3, 16, 16, rename)
	h.waitFor("the first stored", func() bool { return h.openJobs() == 0 && h.storedLevel0("shared_name") != nil })
	h.drop("run_b", 4, 16, 16, rename)
	h.waitFor("the second refused", func() bool { _, ok := h.failed("run_b"); return ok })
	rep, _ := h.failed("run_b")
	for _, want := range []string{"already exists", "run_a.json", "run_b", "overwrite: true"} {
		if !strings.Contains(reason(rep), want) {
			t.Errorf("reason %q, want it to say %q", reason(rep), want)
		}
	}
	if _, err := os.Stat(filepath.Join(h.opt.StateDir, "failed", "run_b", "run_b.raw")); err != nil {
		t.Errorf("the refused acquisition's raw file is not kept: %v", err)
	}
	if got := h.storedLevel0("shared_name"); string(got) != string(first) {
		t.Fatal("the stored dataset changed: the second acquisition overwrote the first")
	}
	// The same acquisition dropped again is refused the same way.
	h.drop("run_a", 3, 16, 16, rename)
	h.waitFor("the repeat refused", func() bool { _, ok := h.failed("run_a"); return ok })
	h.stopWithin(10 * time.Second)
}

func TestOverwriteTrueReplacesAStoredDataset(t *testing.T) {
	h := newHarness(t, destination.Config{}, func(o *Options) { o.Settle = 0; o.Overwrite = true })
	h.startOrFail()
	rename := func(m map[string]any) { m["name"] = "again" }
	h.drop("one", 3, 16, 16, rename)
	h.waitFor("the first archived", func() bool { return h.archived("one") })
	second := h.drop("two", 5, 16, 16, rename)
	h.waitFor("the second archived", func() bool { return h.archived("two") })
	if got := h.storedLevel0("again"); string(got) != string(second) {
		t.Fatal("with overwrite: true the second acquisition did not replace the first")
	}
	h.stopWithin(10 * time.Second)
}

func TestAReleaseRedoneAfterACrashLeavesNoEmptyArchiveDirectory(t *testing.T) {
	h := newHarness(t, destination.Config{}, func(o *Options) { o.Settle = 0 })
	h.startOrFail()
	h.drop("rel", 2, 8, 8, nil)
	h.waitFor("archived", func() bool { return h.archived("rel") && h.openJobs() == 0 })
	h.stopWithin(10 * time.Second)
	// As if SIGKILL came after the files moved and before the journal
	// forgot the job: the record is back, in state stored.
	j, err := OpenJournal(filepath.Join(h.opt.StateDir, "journal.db"))
	must(t, err)
	must(t, j.Put(&Job{ID: "rel", State: StateStored, Manifest: "rel.json", Data: "rel.raw", Name: "rel",
		Archive: filepath.Join(h.opt.StateDir, "archive", "rel")}))
	j.Close()
	h.startOrFail()
	h.waitFor("the job forgotten", func() bool { return h.openJobs() == 0 })
	entries, _ := os.ReadDir(filepath.Join(h.opt.StateDir, "archive"))
	if len(entries) != 1 {
		t.Fatalf("archive holds %d directories, want 1: %v", len(entries), entries)
	}
	h.stopWithin(10 * time.Second)
}

func TestTheFirstRetriedS3RequestIsLoggedAndTheRestAreRateLimited(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	d := &Daemon{log: zap.New(core), m: newMetrics(metricsInfo{})}
	for range 5 {
		d.onS3Retry(fmt.Errorf("connection refused"))
	}
	if n := logs.FilterMessageSnippet("retries").Len(); n != 1 {
		t.Fatalf("%d warnings for 5 retries in a burst, want 1", n)
	}
	if !strings.Contains(fmt.Sprint(logs.All()[0].ContextMap()["error"]), "connection refused") {
		t.Errorf("the warning does not carry the failure: %v", logs.All()[0].ContextMap())
	}
}

// storedLevel0 is level 0 of a stored dataset, nil when it is not there.
func (h *harness) storedLevel0(name string) []byte {
	ds, err := zarr.Open(context.Background(), localfs.New(h.opt.Dest.URL), name+".ome.zarr")
	if err != nil {
		return nil
	}
	b, err := ds.Levels[0].ReadAll(context.Background())
	if err != nil {
		return nil
	}
	return b
}
