package s3sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"go.uber.org/zap"

	"github.com/zspool/zspool/pipeline"
)

// abortTimeout bounds the clean-up of an upload that gave up.
const abortTimeout = 30 * time.Second

// shardWriter streams one object: bytes fill a part buffer; a full part
// starts the multipart upload (first time) and leaves in the background
// while the next one fills. Each part's CRC (the sink's checksum) is
// computed as its bytes arrive and folded into the whole-object CRC, so
// every byte is hashed once.
type shardWriter struct {
	s     *Sink
	ctx   context.Context
	key   string // full object key
	buf   *[]byte
	whole uint64    // CRC of the parts already sent
	part  hash.Hash // CRC of the filling part
	size  int64

	uploadID string
	// orphans is set when CreateMultipartUpload needed a retry: an earlier
	// attempt may have created an upload whose id never reached us.
	orphans bool
	next    int32 // next part number
	wg      sync.WaitGroup
	mu      sync.Mutex
	done    []types.CompletedPart
	err     error
	sealed  string // after Seal, the object's checksum: Commit only completes
}

// Create starts a shard object. Nothing is sent until a part is full.
func (s *Sink) Create(ctx context.Context, rel string) (pipeline.ObjectWriter, error) {
	w := &shardWriter{
		s: s, ctx: ctx, key: s.key(rel),
		part: s.sum.new(),
		next: 1,
	}
	w.buf = s.parts.Get().(*[]byte)
	*w.buf = (*w.buf)[:0]
	return w, nil
}

func (w *shardWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *shardWriter) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// Errors leave out the key: the caller names the shard.

// Write copies p into part buffers, sending each as it fills. It blocks
// while every upload slot of the sink is busy: that is the back-pressure
// that keeps memory flat when the endpoint is slower than the engine.
func (w *shardWriter) Write(p []byte) (int, error) {
	if err := w.failed(); err != nil {
		return 0, err
	}
	n := len(p)
	w.size += int64(n)
	for len(p) > 0 {
		b := *w.buf
		k := copy(b[len(b):cap(b)], p)
		w.part.Write(p[:k])
		*w.buf = b[:len(b)+k]
		p = p[k:]
		if int64(len(*w.buf)) == int64(w.s.cfg.PartSize) {
			if err := w.sendPart(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// sendPart hands the filled buffer to a background UploadPart and starts a
// new one. The buffer stays in memory until the part is acknowledged, so
// the SDK can resend it on every retry.
func (w *shardWriter) sendPart() error {
	if w.uploadID == "" {
		if w.s.hooks.Before != nil {
			if err := w.s.hooks.Before(w.key); err != nil {
				err = fmt.Errorf("recording the intent to upload: %w", err)
				w.fail(err)
				return err
			}
		}
		in := &s3.CreateMultipartUploadInput{Bucket: &w.s.bucket, Key: &w.key}
		w.s.sum.createInput(in)
		w.s.objectOptions().create(in)
		out, err := w.s.client.CreateMultipartUpload(w.ctx, in)
		if err != nil {
			err = fmt.Errorf("starting multipart upload: %w", err)
			w.fail(err)
			return err
		}
		w.uploadID = aws.ToString(out.UploadId)
		if r, ok := retry.GetAttemptResults(out.ResultMetadata); ok && len(r.Results) > 1 {
			w.orphans = true
		}
		w.s.log.Debug("multipart upload started", zap.String("key", w.key), zap.String("upload_id", w.uploadID))
		if w.s.hooks.Started != nil {
			w.s.hooks.Started(w.key, w.uploadID)
		}
	}
	select {
	case w.s.sem <- struct{}{}:
	case <-w.ctx.Done():
		w.fail(w.ctx.Err())
		return w.ctx.Err()
	}
	partCRC := w.s.sum.value(w.part)
	buf, num, sum := w.buf, w.next, w.s.sum.header(partCRC)
	w.whole = w.s.sum.combine(w.whole, partCRC, int64(len(*buf)))
	w.next++
	w.part.Reset()
	w.buf = w.s.parts.Get().(*[]byte)
	*w.buf = (*w.buf)[:0]
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.s.sem }()
		defer w.s.parts.Put(buf)
		in := &s3.UploadPartInput{
			Bucket:        &w.s.bucket,
			Key:           &w.key,
			UploadId:      &w.uploadID,
			PartNumber:    aws.Int32(num),
			Body:          bytes.NewReader(*buf),
			ContentLength: aws.Int64(int64(len(*buf))),
		}
		w.s.sum.partInput(in, sum)
		out, err := w.s.client.UploadPart(w.ctx, in)
		if err != nil {
			w.fail(fmt.Errorf("part %d (%d bytes): %w", num, len(*buf), err))
			return
		}
		w.mu.Lock()
		w.done = append(w.done, w.s.sum.completedPart(out.ETag, num, sum))
		w.mu.Unlock()
	}()
	return nil
}

// Seal sends the tail (with the index) as the last part and waits for
// every part: the object's bytes are all on the server, none visible yet.
// A shard smaller than one part has started no upload and is not sealed:
// Commit puts it whole. After a failure the upload is aborted.
func (w *shardWriter) Seal() (pipeline.SealedObject, bool, error) {
	if w.uploadID == "" {
		return pipeline.SealedObject{}, false, w.failed()
	}
	want := w.want()
	if err := w.sendAll(); err != nil {
		w.abort()
		return pipeline.SealedObject{}, false, err
	}
	w.sealed = want
	// Nothing is written after a seal: the part buffer goes back now, so
	// a sealed shard waiting for its commit holds no memory.
	w.release()
	// The record of the seal vouches for the object from now on: its
	// completion must not die with the job that sealed it.
	w.ctx = context.WithoutCancel(w.ctx)
	return pipeline.SealedObject{Key: w.key, UploadID: w.uploadID, Size: w.size, Checksum: w.s.sum.sealed(want)}, true, nil
}

// sendAll sends the tail as the last part and waits for every part.
func (w *shardWriter) sendAll() error {
	if len(*w.buf) > 0 {
		if err := w.sendPart(); err != nil {
			w.wg.Wait()
			return err
		}
	}
	w.wg.Wait()
	return w.failed()
}

// want is the whole object's CRC as S3 states it.
func (w *shardWriter) want() string {
	return w.s.sum.header(w.s.sum.combine(w.whole, w.s.sum.value(w.part), int64(len(*w.buf))))
}

// Commit completes the upload (sealing it first if Seal was not called) —
// or, for a shard smaller than one part, puts it whole — and then proves
// the object is stored: HeadObject must show its size and CRC. On a
// failure the upload is aborted, unless it was sealed: a sealed upload is
// left for Finish, since a journal may count on it.
func (w *shardWriter) Commit() error {
	defer w.release()
	if w.uploadID == "" {
		return w.s.putVerified(w.ctx, w.key, *w.buf, w.s.sum, w.want())
	}
	if w.sealed == "" {
		want := w.want()
		if err := w.sendAll(); err != nil {
			w.abort()
			return err
		}
		if err := w.s.complete(w.ctx, w.key, w.uploadID, w.parts(), w.size, w.s.sum, want); err != nil {
			w.abort()
			return err
		}
	} else if err := w.s.complete(w.ctx, w.key, w.uploadID, w.parts(), w.size, w.s.sum, w.sealed); err != nil {
		return err
	}
	if w.s.hooks.Done != nil {
		w.s.hooks.Done(w.key, w.uploadID)
	}
	w.sweepOrphans()
	return nil
}

// parts is the completed parts in order.
func (w *shardWriter) parts() []types.CompletedPart {
	parts := slices.Clone(w.done)
	slices.SortFunc(parts, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
	return parts
}

// complete completes an upload of size bytes whose whole CRC (sum's) is
// want, and proves the object stored.
func (s *Sink) complete(ctx context.Context, key, uploadID string, parts []types.CompletedPart, size int64, sum checksum, want string) error {
	in := &s3.CompleteMultipartUploadInput{
		Bucket:          &s.bucket,
		Key:             &key,
		UploadId:        &uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		MpuObjectSize:   aws.Int64(size),
	}
	sum.completeInput(in, want)
	if s.conditional {
		in.IfNoneMatch = aws.String("*")
	}
	_, err := s.client.CompleteMultipartUpload(ctx, in)
	if err != nil {
		// The outcome is ambiguous: the complete may have taken effect and
		// lost its answer, a retry may have met the finished upload, or
		// If-None-Match may have met an earlier identical write. The
		// stored object settles it.
		s.log.Debug("complete was ambiguous; settling by HeadObject", zap.String("key", key), zap.Error(err))
	}
	if verr := s.verify(ctx, key, size, sum, want); verr != nil {
		if err == nil {
			err = verr
		} else if !errors.Is(verr, errNotStored) {
			err = verr
		}
		return fmt.Errorf("completing %d parts: %w", len(parts), err)
	}
	return nil
}

// sweepOrphans aborts every other pending upload of this key after a
// retried CreateMultipartUpload: nothing else writes this key while this
// writer does, so any other upload is a lost first attempt.
func (w *shardWriter) sweepOrphans() {
	if !w.orphans {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), abortTimeout)
	defer cancel()
	ups, err := w.s.pendingUploads(ctx, w.key)
	if err != nil {
		w.s.log.Warn("listing orphaned uploads failed", zap.String("key", w.key), zap.Error(err))
		return
	}
	for _, u := range ups {
		if u.Key == w.key && u.ID != w.uploadID {
			if err := w.s.AbortUpload(ctx, u.Key, u.ID); err != nil {
				w.s.log.Warn("abort of an orphaned upload failed", zap.String("key", u.Key), zap.String("upload_id", u.ID), zap.Error(err))
			}
		}
	}
}

// Abort gives up: parts already sent are discarded by the server.
func (w *shardWriter) Abort() error {
	w.fail(errors.New("aborted"))
	w.wg.Wait()
	w.abort()
	w.release()
	return nil
}

func (w *shardWriter) abort() {
	if w.uploadID == "" {
		return
	}
	defer w.sweepOrphans()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), abortTimeout)
	defer cancel()
	if err := w.s.AbortUpload(ctx, w.key, w.uploadID); err != nil {
		w.s.log.Warn("abort multipart upload failed; it stays until aborted", zap.String("key", w.key), zap.String("upload_id", w.uploadID), zap.Error(err))
	} else if w.s.hooks.Done != nil {
		w.s.hooks.Done(w.key, w.uploadID)
	}
	w.uploadID = ""
}

func (w *shardWriter) release() {
	if w.buf != nil {
		w.s.parts.Put(w.buf)
		w.buf = nil
	}
}
