package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/daemon"
)

// cmdJobs lists queued, running, failed and recently stored acquisitions:
// from the running daemon (GET /jobs on its metrics listener) or, when it
// does not answer, from its journal and failed_dir.
func cmdJobs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("jobs", "[--config FILE] [--json]", stderr)
	path := fs.String("config", defaultConfigPath, "daemon config file (YAML)")
	asJSON := fs.Bool("json", false, "print the view as JSON (what GET /jobs answers)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := config.LoadDaemon(*path)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	v, live := fetchJobs(ctx, cfg)
	if v == nil {
		if v, err = daemon.ReadJobsView(cfg.StateDir, cfg.FailedDir); err != nil {
			return fmt.Errorf("%s%w", live, err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	printJobs(stdout, v)
	return nil
}

// fetchJobs asks the running daemon; nil (and why) when it cannot.
func fetchJobs(ctx context.Context, cfg *config.Daemon) (*daemon.JobsView, string) {
	if !cfg.Metrics.Enabled() {
		return nil, ""
	}
	addr := cfg.Metrics.Listen
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/jobs", nil)
	if err != nil {
		return nil, ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Sprintf("the daemon does not answer on %s (%v); ", addr, err)
	}
	defer resp.Body.Close()
	var v daemon.JobsView
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&v) != nil {
		return nil, fmt.Sprintf("the daemon on %s answered %s; ", addr, resp.Status)
	}
	return &v, ""
}

func printJobs(w io.Writer, v *daemon.JobsView) {
	fmt.Fprintf(w, "# from the %s\n", map[string]string{"daemon": "running daemon", "journal": "journal (the daemon is not running)"}[v.Source])
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tID\tDATASET\tDETAIL")
	for _, j := range v.Waiting {
		fmt.Fprintf(tw, "waiting\t%s\t\tsince %s\n", j.ID, j.Since.Format(time.RFC3339))
	}
	for _, j := range v.Queued {
		fmt.Fprintf(tw, "queued\t%s\t%s\t\n", j.ID, j.Dataset)
	}
	for _, j := range v.Running {
		detail := fmt.Sprintf("%s, layer %d of %d", j.State, j.LayersDone, j.Layers)
		if j.Attempts > 0 {
			detail += fmt.Sprintf(", %d retries, last: %s", j.Attempts, oneLine(j.LastError))
		}
		fmt.Fprintf(tw, "running\t%s\t%s\t%s\n", j.ID, j.Dataset, detail)
	}
	for _, j := range v.Failed {
		fmt.Fprintf(tw, "failed\t%s\t\t%s (zspool requeue %s)\n", j.ID, oneLine(j.Reason), j.ID)
	}
	for _, o := range v.Stored {
		fmt.Fprintf(tw, "stored\t%s\t%s\t%s, ratio %.2f, %s\n", o.Job, o.Dataset, o.URI, o.Ratio, o.Time.Format(time.RFC3339))
	}
	tw.Flush()
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 160 {
		s = s[:157] + "…"
	}
	return s
}

// cmdRequeue puts failed acquisitions back in the spool.
func cmdRequeue(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("requeue", "[--config FILE] ID…", stderr)
	path := fs.String("config", defaultConfigPath, "daemon config file (YAML)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return missingArgs(fs, stderr, "failed job ID (as `zspool jobs` lists them)")
	}
	cfg, err := config.LoadDaemon(*path)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	done, err := daemon.Requeue(cfg.SpoolDir, cfg.FailedDir, fs.Args())
	for _, id := range done {
		fmt.Fprintf(stdout, "%s: back in %s\n", id, cfg.SpoolDir)
	}
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}
