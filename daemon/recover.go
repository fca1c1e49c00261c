package daemon

import (
	"context"
	"encoding/json"
	"fmt"

	"go.uber.org/zap"
)

// recover picks up after a crash: multipart uploads the journal recorded as
// open are aborted (their shards are rewritten whole), half-claimed jobs
// are claimed fully, and every job is queued again at its first incomplete
// shard layer.
func (d *Daemon) recover(ctx context.Context) error {
	ups, err := d.journal.Uploads()
	if err != nil {
		return err
	}
	for key, u := range ups {
		if d.s3 != nil {
			if err := d.s3.AbortUpload(ctx, key, u.ID); err != nil {
				return fmt.Errorf("aborting stale upload of %s: %w", key, err)
			}
			d.log.Info("aborted a stale multipart upload", zap.String("key", key), zap.String("job", u.Job))
		}
		if err := d.journal.DoneUpload(key); err != nil {
			return err
		}
	}
	jobs, err := d.journal.Jobs()
	if err != nil {
		return err
	}
	for _, job := range jobs {
		if job.State == StateClaiming {
			if err := d.finishClaim(job); err != nil {
				return fmt.Errorf("job %s: finishing its claim: %w", job.ID, err)
			}
		}
		d.log.Info("recovered job", zap.String("job", job.ID), zap.String("state", job.State), zap.Int64("layers_done", job.LayersDone))
		d.enqueue(item{id: job.ID, manifest: job.Manifest, data: job.Data, name: job.Name, recovered: true})
	}
	return nil
}

func jsonIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}
