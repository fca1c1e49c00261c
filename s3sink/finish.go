package s3sink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/zspool/zspool/pipeline"
)

var _ pipeline.Finisher = (*Sink)(nil)

// Finish makes a sealed object visible from its record alone, as a job
// resumed after a crash does: an object already stored with the sealed
// size and checksum is done; otherwise the upload's parts are listed from
// the server and the upload is completed. When the upload is gone, or
// holds other bytes than were sealed, and the object is not stored either,
// the answer is pipeline.ErrUnfinishable — but only after a few seconds of
// looking again: a complete sent by the writer that crashed may still be
// under way on the server, which then empties the upload and stores the
// object a moment later.
func (s *Sink) Finish(ctx context.Context, o pipeline.SealedObject) error {
	wait := finishSettle
	for attempt := 1; ; attempt++ {
		err := s.finishOnce(ctx, o)
		if err == nil {
			s.finished(o)
			return nil
		}
		if !errors.Is(err, pipeline.ErrUnfinishable) || attempt == finishAttempts {
			return fmt.Errorf("sealed object %s: %w", o.Key, err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("sealed object %s: %w", o.Key, ctx.Err())
		}
		wait *= 2
	}
}

// finishAttempts and finishSettle space Finish's looks at an upload that
// seems gone: 0.2 s doubling, about 6 s in all.
const (
	finishAttempts = 6
	finishSettle   = 200 * time.Millisecond
)

func (s *Sink) finishOnce(ctx context.Context, o pipeline.SealedObject) error {
	sum, want, err := parseSealed(o.Checksum)
	if err != nil {
		return err
	}
	err = s.verify(ctx, o.Key, o.Size, sum, want)
	if err == nil || !errors.Is(err, errNotStored) {
		return err
	}
	parts, err := s.listParts(ctx, o.Key, o.UploadID)
	if err != nil {
		if noSuchUpload(err) {
			return fmt.Errorf("upload %s is gone and the object is not stored: %w", o.UploadID, pipeline.ErrUnfinishable)
		}
		return err
	}
	var size int64
	for _, p := range parts {
		size += aws.ToInt64(p.Size)
	}
	if size != o.Size {
		return fmt.Errorf("upload %s holds %d bytes, not the sealed %d: %w", o.UploadID, size, o.Size, pipeline.ErrUnfinishable)
	}
	done := make([]types.CompletedPart, len(parts))
	for i, p := range parts {
		done[i] = sum.listedPart(p)
	}
	err = s.complete(ctx, o.Key, o.UploadID, done, o.Size, sum, want)
	if st := httpStatus(err); st == 400 || st == 404 {
		// The server refuses the parts it lists (InvalidPart: a complete
		// cut short emptied them) or the upload is gone: not for a retry.
		return fmt.Errorf("%w: %w", err, pipeline.ErrUnfinishable)
	}
	return err
}

func (s *Sink) finished(o pipeline.SealedObject) {
	if s.hooks.Done != nil {
		s.hooks.Done(o.Key, o.UploadID)
	}
}

// listParts lists every part of an upload, in part-number order.
func (s *Sink) listParts(ctx context.Context, key, uploadID string) ([]types.Part, error) {
	var parts []types.Part
	in := &s3.ListPartsInput{Bucket: &s.bucket, Key: &key, UploadId: &uploadID}
	for {
		out, err := s.client.ListParts(ctx, in)
		if err != nil {
			return nil, err
		}
		parts = append(parts, out.Parts...)
		if !aws.ToBool(out.IsTruncated) || out.NextPartNumberMarker == nil {
			return parts, nil
		}
		in.PartNumberMarker = out.NextPartNumberMarker
	}
}
