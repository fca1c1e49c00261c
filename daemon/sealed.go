package daemon

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/zspool/zspool/pipeline"
)

// A job on a store whose shards seal (S3) records each layer's sealed
// uploads before the layer counts as done, and makes them visible after,
// several layers at once. A restart finishes the sealed uploads from the
// journal before anything may sweep the dataset's uploads or resume it.

// recordSealed adds a layer's sealed objects to the job's record.
func (d *Daemon) recordSealed(id string, objs []pipeline.SealedObject) error {
	_, err := d.journal.Update(id, func(j *Job) { j.Sealed = append(j.Sealed, objs...) })
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// dropSealed removes visible objects from the job's record. A record left
// by a failure here only costs a HeadObject at the next settle.
func (d *Daemon) dropSealed(log *zap.Logger, id string, objs []pipeline.SealedObject) {
	gone := make(map[string]bool, len(objs))
	for _, o := range objs {
		gone[o.Key+"\x00"+o.UploadID] = true
	}
	_, err := d.journal.Update(id, func(j *Job) {
		kept := j.Sealed[:0]
		for _, o := range j.Sealed {
			if !gone[o.Key+"\x00"+o.UploadID] {
				kept = append(kept, o)
			}
		}
		j.Sealed = kept
	})
	if err != nil {
		log.Warn("journal: dropping the records of committed shards", zap.Error(err))
	}
}

// settle finishes, in the order they were sealed, the uploads the job
// recorded, and moves the job's resume point past them. One the store can
// no longer finish (a complete cut short by the crash can leave MinIO's
// upload empty) stops it there: the resume point stays short of that
// object's layer, which the run writes again, and the uploads after it are
// swept. Any other failure (the destination down) is returned, and the
// records are kept for the next try.
func (d *Daemon) settle(ctx context.Context, log *zap.Logger, job *Job) (*Job, error) {
	if len(job.Sealed) == 0 {
		return job, nil
	}
	fin, ok := d.dest.(pipeline.Finisher)
	var reached int64 // the resume point every finished object reaches
	finished := 0
	for i, o := range job.Sealed {
		var err error
		if !ok {
			err = fmt.Errorf("the destination cannot finish sealed uploads: %w", pipeline.ErrUnfinishable)
		} else {
			err = fin.Finish(ctx, o)
		}
		if errors.Is(err, pipeline.ErrUnfinishable) {
			// Only the records before this object's are whole: objects of
			// one record share its Resume.
			reached = 0
			for _, p := range job.Sealed[:i] {
				if p.Resume < o.Resume {
					reached = max(reached, p.Resume)
				}
			}
			log.Warn("a sealed shard cannot be finished: its layer is written again", zap.String("key", o.Key), zap.Error(err))
			break
		}
		if err != nil {
			return job, fmt.Errorf("finishing sealed shards: %w", err)
		}
		reached = max(reached, o.Resume)
		finished++
	}
	job, err := d.journal.Update(job.ID, func(j *Job) {
		j.Sealed = nil
		j.LayersDone = max(j.LayersDone, reached)
	})
	if err != nil {
		return job, fmt.Errorf("journal: %w", err)
	}
	log.Info("finished the shards sealed before the restart", zap.Int("shards", finished), zap.Int64("layers_done", job.LayersDone))
	return job, nil
}
