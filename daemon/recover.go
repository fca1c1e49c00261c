package daemon

import (
	"context"
	"encoding/json"
	"fmt"

	"go.uber.org/zap"
)

// recover picks up after a crash: half-claimed jobs are claimed fully (or
// the claim is undone), the uploads of every journaled dataset are aborted
// (their shards are rewritten whole), and every job is queued again at its
// first incomplete shard layer. One job's inconsistent state never stops
// the daemon: that job is undone or failed with a reason, and the rest are
// served. Only a journal that cannot be read is fatal.
func (d *Daemon) recover(ctx context.Context) error {
	jobs, err := d.journal.Jobs()
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	ups, err := d.journal.Uploads()
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	// No job runs yet: every upload of a journaled dataset is stale, once
	// the shards its job sealed are finished.
	names := map[string]bool{}
	for _, u := range ups {
		if n := nameOfKey(u.Key); n != "" {
			names[n] = true
		}
	}
	for i, j := range jobs {
		names[j.Name] = true
		log := d.log.With(zap.String("job", j.ID), zap.String("dataset", j.Name))
		settled, err := d.settle(ctx, log, j)
		if err != nil {
			// Its own run finishes them, and sweeps, first.
			log.Warn("recovery: sealed shards not finished yet", zap.Error(err))
			names[j.Name] = false
			continue
		}
		jobs[i] = settled
	}
	for name, sweep := range names {
		if !sweep {
			continue
		}
		if err := d.sweepDataset(ctx, name); err != nil {
			// An outage at start must not keep the daemon down: the job's
			// own sweeps (before its retry and its release) and the
			// periodic one try again.
			d.log.Warn("recovery: uploads not aborted yet", zap.String("dataset", name), zap.Error(err))
		}
	}
	for _, job := range jobs {
		log := d.log.With(zap.String("job", job.ID), zap.String("dataset", job.Name))
		if job.State == StateClaiming {
			if err := d.finishClaim(job); err != nil {
				d.undoClaim(log, job, fmt.Errorf("finishing its claim after a restart: %w", err))
				continue
			}
		}
		log.Info("recovered job", zap.String("state", job.State), zap.Int64("layers_done", job.LayersDone))
		d.enqueue(item{id: job.ID, manifest: job.Manifest, data: job.Data, name: job.Name, recovered: true})
	}
	return nil
}

func jsonIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}
