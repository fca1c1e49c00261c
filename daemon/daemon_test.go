package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zspool/zspool/destination"
	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/zarr"
)

type harness struct {
	t      *testing.T
	opt    Options
	d      *Daemon
	cancel context.CancelFunc
	done   chan error
}

func newHarness(t *testing.T, dest destination.Config, tweak func(*Options)) *harness {
	t.Helper()
	base := t.TempDir()
	opt := Options{
		SpoolDir: filepath.Join(base, "spool"), StateDir: filepath.Join(base, "state"),
		Release: "archive", Dest: dest, ConcurrentJobs: 2, MemoryBudget: 512 << 20,
		Settle: 300 * time.Millisecond, RescanInterval: time.Second, ShutdownTimeout: 10 * time.Second,
		JobBackoff: 50 * time.Millisecond, JobMaxBackoff: 500 * time.Millisecond, Version: "test",
	}
	if opt.Dest.URL == "" {
		opt.Dest.URL = filepath.Join(base, "out")
	}
	if err := os.MkdirAll(opt.SpoolDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if tweak != nil {
		tweak(&opt)
	}
	return &harness{t: t, opt: opt}
}

func (h *harness) start() {
	h.t.Helper()
	h.startOrFail()
}

func (h *harness) stop() {
	h.t.Helper()
	h.cancel()
	if err := <-h.done; err != nil {
		h.t.Fatalf("Run: %v", err)
	}
}

// waitFor polls cond for up to a minute: bounded, never a fixed sleep.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// drop writes an acquisition the way acquisition software must: raw file
// first, manifest last through a temporary name.
func (h *harness) drop(name string, frames, y, x int64, edit func(m map[string]any)) []byte {
	h.t.Helper()
	raw := make([]byte, frames*y*x*2)
	rng := rand.New(rand.NewPCG(uint64(len(name)), uint64(frames)))
	for i := range raw {
		raw[i] = byte(rng.IntN(16))
	}
	m := map[string]any{"version": 1, "dtype": "uint16", "dimensions": []map[string]any{
		{"name": "t", "type": "time", "size": frames, "chunk": 1, "shard": 2},
		{"name": "y", "type": "space", "size": y, "chunk": min(y, 32)},
		{"name": "x", "type": "space", "size": x, "chunk": min(x, 32)},
	}}
	if edit != nil {
		edit(m)
	}
	must(h.t, os.WriteFile(filepath.Join(h.opt.SpoolDir, name+".raw.part"), raw, 0o644))
	must(h.t, os.Rename(filepath.Join(h.opt.SpoolDir, name+".raw.part"), filepath.Join(h.opt.SpoolDir, name+".raw")))
	b, _ := json.Marshal(m)
	must(h.t, os.WriteFile(filepath.Join(h.opt.SpoolDir, name+".json.tmp"), b, 0o644))
	must(h.t, os.Rename(filepath.Join(h.opt.SpoolDir, name+".json.tmp"), filepath.Join(h.opt.SpoolDir, name+".json")))
	return raw
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (h *harness) archived(id string) bool {
	_, err := os.Stat(filepath.Join(h.opt.StateDir, "archive", id, id+".raw"))
	return err == nil
}

func (h *harness) failed(id string) (map[string]any, bool) {
	b, err := os.ReadFile(filepath.Join(h.opt.StateDir, "failed", id, id+".error.json"))
	if err != nil {
		return nil, false
	}
	var rep map[string]any
	_ = json.Unmarshal(b, &rep)
	return rep, true
}

func (h *harness) openJobs() int {
	jobs, err := h.d.journal.Jobs()
	if err != nil {
		h.t.Fatal(err)
	}
	return len(jobs)
}

func TestTheDaemonConvertsArchivesAndForgetsEveryAcquisition(t *testing.T) {
	h := newHarness(t, destination.Config{}, nil)
	before := h.drop("early", 5, 40, 50, nil) // present at start: the startup scan finds it
	h.start()
	raws := map[string][]byte{"early": before}
	for i := range 6 {
		id := fmt.Sprintf("acq_%02d", i)
		raws[id] = h.drop(id, int64(3+i), 33+int64(i), 47, nil)
	}
	h.waitFor("every acquisition archived", func() bool {
		for id := range raws {
			if !h.archived(id) {
				return false
			}
		}
		return true
	})
	h.waitFor("an empty journal", func() bool { return h.openJobs() == 0 })
	store := localfs.New(h.opt.Dest.URL)
	for id, raw := range raws {
		ds, err := zarr.Open(context.Background(), store, id+".ome.zarr")
		if err != nil {
			t.Fatal(err)
		}
		got, err := ds.Levels[0].ReadAll(context.Background())
		if err != nil || string(got) != string(raw) {
			t.Fatalf("%s: level 0 differs from the raw file (%v)", id, err)
		}
	}
	if entries, _ := os.ReadDir(h.opt.SpoolDir); len(entries) != 0 {
		t.Fatalf("spool not empty: %v", entries)
	}
	h.stop()
}

func TestBadInputGoesToFailedWithAReasonAndTheRestIsServed(t *testing.T) {
	h := newHarness(t, destination.Config{}, nil)
	h.start()
	h.drop("good", 4, 20, 20, nil)
	h.drop("baddtype", 4, 20, 20, func(m map[string]any) { m["dtype"] = "uint12" })
	h.drop("short", 4, 20, 20, func(m map[string]any) { m["dimensions"].([]map[string]any)[0]["size"] = 5 })
	// A symlinked raw file is refused, not followed.
	must(t, os.WriteFile(filepath.Join(t.TempDir(), "x"), nil, 0o644))
	h.drop("linked", 2, 8, 8, nil)
	h.waitFor("good archived", func() bool { return h.archived("good") })
	for id, want := range map[string]string{"baddtype": "dtype", "short": "truncated"} {
		h.waitFor(id+" failed", func() bool { _, ok := h.failed(id); return ok })
		rep, _ := h.failed(id)
		if !strings.Contains(fmt.Sprint(rep["reason"]), want) || rep["zspool_version"] != "test" {
			t.Errorf("%s: report %v, want a reason mentioning %q", id, rep, want)
		}
		if _, err := os.Stat(filepath.Join(h.opt.StateDir, "failed", id, id+".json")); err != nil {
			t.Errorf("%s: manifest not moved beside its report: %v", id, err)
		}
	}
	h.stop()
}
