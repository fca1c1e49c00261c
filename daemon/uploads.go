package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/zspool/zspool/pipeline"
)

// Multipart uploads are the one thing a job can leave on the destination
// that no reader sees and that costs money until aborted. The rules:
//   - an intent (key, no id) is journaled before CreateMultipartUpload is
//     sent, and (key, id) once it answers, so no upload can exist that the
//     journal does not at least know the key of;
//   - a dataset's uploads are swept (listed on the destination and aborted,
//     then their records dropped) whenever no writer of it is live: at
//     recovery, before a job's retry, before its release, after a failure;
//   - a periodic sweep does the same for records no journal job owns, and
//     aborts uploads under the destination prefix that the journal never
//     knew once they are older than foreignUploadAge (another daemon's
//     could share the prefix, so only stale ones are taken).

// foreignUploadAge is how old an upload the journal never recorded must be
// before the periodic sweep aborts it.
const foreignUploadAge = 24 * time.Hour

// sweepEvery is how often the periodic sweep runs.
const sweepEvery = 10 * time.Minute

// uploadStore is what the daemon needs of a store that leaves pending
// uploads behind (S3's multipart uploads): to hear of each, to list them
// and to abort one. A store without them (a local directory) is not one.
type uploadStore interface {
	TrackUploads(pipeline.UploadHooks)
	// DatasetPrefix and Prefix are the full key prefixes of a dataset
	// root and of the whole destination, as UploadsUnder takes them.
	DatasetPrefix(root string) string
	Prefix() string
	UploadsUnder(ctx context.Context, prefix string) ([]pipeline.PendingUpload, error)
	AbortUpload(ctx context.Context, key, id string) error
}

// trackUploads wires the store's upload events into the journal.
func (d *Daemon) trackUploads() {
	d.uploads.TrackUploads(pipeline.UploadHooks{
		Before: func(key string) error {
			return d.journal.AddUpload(Upload{Key: key, Job: d.jobOfKey(key)})
		},
		Started: func(key, id string) {
			if err := d.journal.AddUpload(Upload{Key: key, ID: id, Job: d.jobOfKey(key)}); err != nil {
				// The intent is journaled already: a sweep still finds it.
				d.log.Error("journal: recording an upload", zap.String("key", key), zap.Error(err))
			}
		},
		Done: func(key, id string) { _ = d.journal.DoneUpload(key, id) },
	})
}

// nameOfKey is the dataset name an object key belongs to ("" for none).
func nameOfKey(key string) string {
	for _, part := range strings.Split(key, "/") {
		if name, ok := strings.CutSuffix(part, ".ome.zarr"); ok {
			return name
		}
	}
	return ""
}

// sweepDataset aborts every multipart upload of a dataset (its journaled
// ids, and whatever the destination lists under its root), then drops
// its records. The caller guarantees no writer of the dataset is live.
func (d *Daemon) sweepDataset(ctx context.Context, name string) error {
	if d.uploads == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	prefix := d.uploads.DatasetPrefix(pipeline.DatasetRoot(name))
	recs, err := d.journal.Uploads()
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	seen := map[string]bool{}
	var errs []error
	abort := func(key, id string) {
		if seen[key+"\x00"+id] {
			return
		}
		seen[key+"\x00"+id] = true
		if err := d.uploads.AbortUpload(ctx, key, id); err != nil {
			errs = append(errs, fmt.Errorf("aborting upload of %s: %w", key, err))
			return
		}
		d.log.Info("aborted a stale multipart upload", zap.String("key", key), zap.String("upload_id", id), zap.String("dataset", name))
	}
	for _, r := range recs {
		if r.ID != "" && strings.HasPrefix(r.Key, prefix) {
			abort(r.Key, r.ID)
		}
	}
	listed, err := d.uploads.UploadsUnder(ctx, prefix)
	if err != nil {
		errs = append(errs, err)
	}
	for _, u := range listed {
		abort(u.Key, u.ID)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dataset %s: sweeping multipart uploads: %w", name, err)
	}
	return d.journal.DropUploads(prefix)
}

// reserveName marks a dataset name busy for a sweep, so no job of it
// starts meanwhile; false when a job holds it.
func (d *Daemon) reserveName(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, busy := d.names[name]; busy {
		return false
	}
	d.names[name] = ""
	return true
}

func (d *Daemon) releaseName(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names[name] == "" {
		delete(d.names, name)
	}
	d.kick()
}

// sweepStale is the periodic sweep: the datasets of upload records that no
// journal job owns, then uploads the journal never knew that are older
// than foreignUploadAge. It never touches a dataset a job is writing.
func (d *Daemon) sweepStale(ctx context.Context) {
	if d.uploads == nil {
		return
	}
	recs, err := d.journal.Uploads()
	if err != nil {
		d.log.Warn("upload sweep: journal", zap.Error(err))
		return
	}
	jobs, err := d.journal.Jobs()
	if err != nil {
		d.log.Warn("upload sweep: journal", zap.Error(err))
		return
	}
	owned := map[string]bool{}
	for _, j := range jobs {
		owned[j.Name] = true
	}
	known := map[string]bool{}
	for _, r := range recs {
		known[nameOfKey(r.Key)] = true
	}
	for name := range known {
		if owned[name] || !d.reserveName(name) {
			continue
		}
		if err := d.sweepDataset(ctx, name); err != nil {
			d.log.Warn("upload sweep", zap.Error(err))
		}
		d.releaseName(name)
	}
	listed, err := d.uploads.UploadsUnder(ctx, d.uploads.Prefix())
	if err != nil {
		d.log.Warn("upload sweep: listing the destination's uploads", zap.Error(err))
		return
	}
	for _, u := range listed {
		name := nameOfKey(u.Key)
		if name == "" || owned[name] || known[name] || time.Since(u.Initiated) < foreignUploadAge {
			continue
		}
		if !d.reserveName(name) {
			continue
		}
		if err := d.uploads.AbortUpload(ctx, u.Key, u.ID); err != nil {
			d.log.Warn("upload sweep: abort", zap.String("key", u.Key), zap.Error(err))
		} else {
			d.log.Info("aborted an abandoned multipart upload", zap.String("key", u.Key), zap.String("upload_id", u.ID),
				zap.Time("initiated", u.Initiated))
		}
		d.releaseName(name)
	}
}

// retryLogEvery spaces the warnings about retried S3 requests: an outage
// is announced at its first retry, not after the SDK has spent them all,
// and then reminded of at this pace rather than once per request.
const retryLogEvery = 30 * time.Second

// onS3Retry counts a retried S3 request and warns about it, rate-limited.
// SDK errors carry the operation, status and request id, never the
// credentials or signed headers.
func (d *Daemon) onS3Retry(err error) {
	d.m.retries.Inc()
	now := time.Now().UnixNano()
	last := d.lastRetryLog.Load()
	if now-last < int64(retryLogEvery) || !d.lastRetryLog.CompareAndSwap(last, now) {
		return
	}
	d.log.Warn("destination request failed; the S3 client retries it", zap.Error(err),
		zap.Duration("next_warning_after", retryLogEvery))
}
