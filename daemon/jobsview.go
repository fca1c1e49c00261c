package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// JobsView is the state of every acquisition the daemon knows: what
// `zspool jobs` prints and GET /jobs answers.
type JobsView struct {
	Source  string        `json:"source"` // "daemon" (live) or "journal" (the daemon is stopped)
	Waiting []WaitingView `json:"waiting"`
	Queued  []JobView     `json:"queued"`
	Running []JobView     `json:"running"`
	Failed  []FailedView  `json:"failed"`
	Stored  []Outcome     `json:"stored"` // the most recent, newest first
}

// WaitingView is a manifest in the spool that is not claimed yet.
type WaitingView struct {
	ID    string    `json:"id"`
	Since time.Time `json:"since"`
}

// JobView is a claimed (or queued) job.
type JobView struct {
	ID         string `json:"id"`
	Dataset    string `json:"dataset"`
	State      string `json:"state,omitempty"`
	LayersDone int64  `json:"layers_done"`
	Layers     int64  `json:"layers"`
	Attempts   int    `json:"attempts,omitempty"`
	LastError  string `json:"last_error,omitempty"`
}

// FailedView is an acquisition in failed_dir, with its reason.
type FailedView struct {
	ID     string    `json:"id"`     // the directory's name in failed_dir: what requeue takes
	Reason string    `json:"reason"` // from its .error.json
	Time   time.Time `json:"time"`
	Dir    string    `json:"dir"`
}

// recentStored is how many stored jobs the view lists.
const recentStored = 50

// jobsView is the live view.
func (d *Daemon) jobsView() (*JobsView, error) {
	v := &JobsView{Source: "daemon"}
	d.mu.Lock()
	for id, p := range d.waiting {
		v.Waiting = append(v.Waiting, WaitingView{ID: id, Since: p.since.UTC()})
	}
	queued := map[string]bool{}
	for _, it := range d.queue {
		queued[it.id] = true
		v.Queued = append(v.Queued, JobView{ID: it.id, Dataset: it.name})
	}
	d.mu.Unlock()
	slices.SortFunc(v.Waiting, func(a, b WaitingView) int { return a.Since.Compare(b.Since) })
	jobs, err := d.journal.Jobs()
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if !queued[j.ID] {
			v.Running = append(v.Running, jobView(j))
		}
	}
	if err := fillFinished(v, d.journal, d.opt.FailedDir); err != nil {
		return nil, err
	}
	return v, nil
}

func jobView(j *Job) JobView {
	return JobView{ID: j.ID, Dataset: j.Name, State: j.State, LayersDone: j.LayersDone, Layers: j.Layers,
		Attempts: j.Attempts, LastError: j.LastError}
}

// fillFinished adds failed_dir's acquisitions and the recent stored jobs.
func fillFinished(v *JobsView, j *Journal, failedDir string) error {
	hist, err := j.History()
	if err != nil {
		return err
	}
	for _, o := range hist {
		if o.Event == "stored" && len(v.Stored) < recentStored {
			v.Stored = append(v.Stored, o)
		}
	}
	failed, err := failedAcquisitions(failedDir)
	if err != nil {
		return err
	}
	v.Failed = failed
	return nil
}

// failedAcquisitions lists failed_dir's entries that hold an error report.
func failedAcquisitions(failedDir string) ([]FailedView, error) {
	entries, err := os.ReadDir(failedDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed_dir %s: %w", failedDir, err)
	}
	var out []FailedView
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(failedDir, e.Name())
		rep, err := readErrorReport(dir)
		if err != nil {
			continue // not (yet) a complete quarantine
		}
		out = append(out, FailedView{ID: e.Name(), Reason: rep.Reason, Time: rep.Time, Dir: dir})
	}
	slices.SortFunc(out, func(a, b FailedView) int { return b.Time.Compare(a.Time) })
	return out, nil
}

// readErrorReport reads the one <id>.error.json of a failed_dir entry.
func readErrorReport(dir string) (*errorReport, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.error.json"))
	if err != nil || len(matches) != 1 {
		return nil, fmt.Errorf("%s: want one .error.json, found %d", dir, len(matches))
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		return nil, err
	}
	var rep errorReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", matches[0], err)
	}
	return &rep, nil
}

// serveJobs answers GET /jobs with the live view.
func (d *Daemon) serveJobs(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	v, err := d.jobsView()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// ReadJobsView builds the view from a stopped daemon's journal and
// failed_dir. While the daemon runs its journal is locked: ask its HTTP
// listener (GET /jobs) instead.
func ReadJobsView(stateDir, failedDir string) (*JobsView, error) {
	path := filepath.Join(stateDir, "journal.db")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w (a running daemon holds it: enable its metrics listener to ask it)", path, err)
	}
	j := &Journal{db: db}
	defer j.Close()
	v := &JobsView{Source: "journal"}
	jobs, err := j.Jobs()
	if err != nil {
		return nil, err
	}
	for _, job := range jobs {
		v.Running = append(v.Running, jobView(job))
	}
	if failedDir == "" {
		failedDir = filepath.Join(stateDir, "failed")
	}
	if err := fillFinished(v, j, failedDir); err != nil {
		return nil, err
	}
	return v, nil
}

// Requeue puts failed acquisitions back into the spool, raw file first
// and manifest last, as acquisition software does, so a running daemon
// picks them up like any new one (settle included) and a stopped one on
// its next start. ids are failed_dir entry names. An id whose files would
// overwrite files in the spool is refused; nothing of it moves.
func Requeue(spoolDir, failedDir string, ids []string) ([]string, error) {
	var done []string
	for _, id := range ids {
		if id == "" || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
			return done, fmt.Errorf("%q: not a failed_dir entry name", id)
		}
		dir := filepath.Join(failedDir, id)
		rep, err := readErrorReport(dir)
		if err != nil {
			return done, fmt.Errorf("requeue %s: %w", id, err)
		}
		files := []string{rep.Data, rep.Manifest}
		if rep.Data == "" {
			files = files[1:]
		}
		for _, f := range files {
			if _, err := os.Lstat(filepath.Join(dir, f)); err != nil {
				return done, fmt.Errorf("requeue %s: %s is not in %s: %w", id, f, dir, err)
			}
			if _, err := os.Lstat(filepath.Join(spoolDir, f)); err == nil {
				return done, fmt.Errorf("requeue %s: the spool already has a file named %s; move it away first", id, f)
			}
		}
		for _, f := range files {
			if err := moveInto(dir, spoolDir, f); err != nil {
				return done, fmt.Errorf("requeue %s: %w", id, err)
			}
		}
		// The report goes last: until then `zspool jobs` still lists
		// the entry, so a failure midway is visible, not lost.
		reports, _ := filepath.Glob(filepath.Join(dir, "*.error.json"))
		for _, r := range reports {
			_ = os.Remove(r)
		}
		_ = os.Remove(dir)
		done = append(done, id)
	}
	return done, nil
}
