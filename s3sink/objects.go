package s3sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"go.uber.org/zap"

	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zarr"
)

// errNotStored says HeadObject found no object at the key.
var errNotStored = errors.New("object not stored")

// verify holds the stored object to its size and CRC (sum's). ETags are
// never consulted: for multipart objects they are not content hashes.
func (s *Sink) verify(ctx context.Context, key string, size int64, sum checksum, crc string) error {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: &s.bucket, Key: &key, ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		if httpStatus(err) == 404 {
			return errNotStored
		}
		return fmt.Errorf("HeadObject: %w", err)
	}
	got, gotCRC := aws.ToInt64(out.ContentLength), sum.stored(out)
	switch {
	case gotCRC == "":
		return fmt.Errorf("HeadObject returned no %s checksum (size %d)", sum.name, got)
	case got != size || gotCRC != crc:
		return fmt.Errorf("stored object differs: %d bytes %s %s, want %d bytes %s %s", got, sum.name, gotCRC, size, sum.name, crc)
	}
	return nil
}

// putVerified stores a small object in one PutObject and verifies it.
func (s *Sink) putVerified(ctx context.Context, key string, data []byte, sum checksum, crc string) error {
	in := &s3.PutObjectInput{
		Bucket: &s.bucket, Key: &key,
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}
	sum.putInput(in, crc)
	if s.conditional {
		in.IfNoneMatch = aws.String("*")
	}
	s.objectOptions().put(in)
	_, err := s.client.PutObject(ctx, in)
	if err != nil {
		s.log.Debug("put was ambiguous or refused; settling by HeadObject", zap.String("key", key), zap.Error(err))
	}
	if verr := s.verify(ctx, key, int64(len(data)), sum, crc); verr != nil {
		if err == nil || !errors.Is(verr, errNotStored) {
			err = verr
		}
		return err
	}
	return nil
}

// Put stores a metadata document whole: a plain PutObject (no
// If-None-Match, since documents are rewritten on reruns), verified.
func (s *Sink) Put(ctx context.Context, rel string, data []byte) error {
	key := s.key(rel)
	crc := s.sum.header(s.sum.of(data))
	in := &s3.PutObjectInput{
		Bucket: &s.bucket, Key: &key,
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		ContentType:   aws.String("application/json"),
	}
	s.sum.putInput(in, crc)
	s.objectOptions().put(in)
	_, err := s.client.PutObject(ctx, in)
	if verr := s.verify(ctx, key, int64(len(data)), s.sum, crc); verr != nil {
		if err == nil || !errors.Is(verr, errNotStored) {
			err = verr
		}
		return fmt.Errorf("object %s: %w", key, err)
	}
	return nil
}

// Delete removes an object; S3 answers success for a missing key.
func (s *Sink) Delete(ctx context.Context, rel string) error {
	key := s.key(rel)
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &key}); err != nil {
		return fmt.Errorf("object %s: delete: %w", key, err)
	}
	return nil
}

// Get reads a whole object (zarr.Store).
func (s *Sink) Get(ctx context.Context, rel string) ([]byte, error) {
	return s.get(ctx, rel, nil)
}

// GetRange reads n bytes at off (zarr.Store).
func (s *Sink) GetRange(ctx context.Context, rel string, off, n int64) ([]byte, error) {
	if off < 0 || n <= 0 {
		return nil, fmt.Errorf("%s: bad range [%d, +%d)", rel, off, n)
	}
	b, err := s.get(ctx, rel, aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1)))
	if err == nil && int64(len(b)) != n {
		return nil, fmt.Errorf("%s: range [%d, +%d) returned %d bytes", rel, off, n, len(b))
	}
	return b, err
}

func (s *Sink) get(ctx context.Context, rel string, rng *string) ([]byte, error) {
	key := s.key(rel)
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key, Range: rng})
	if err != nil {
		if httpStatus(err) == 404 {
			return nil, fmt.Errorf("%s: %w", key, zarr.ErrNotFound)
		}
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return b, nil
}

// Size is the object's length (zarr.Store).
func (s *Sink) Size(ctx context.Context, rel string) (int64, error) {
	key := s.key(rel)
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		if httpStatus(err) == 404 {
			return 0, fmt.Errorf("%s: %w", key, zarr.ErrNotFound)
		}
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return aws.ToInt64(out.ContentLength), nil
}

// List returns the destination-relative keys under rel, sorted.
func (s *Sink) List(ctx context.Context, rel string) ([]string, error) {
	prefix := s.key(rel)
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, strings.TrimPrefix(strings.TrimPrefix(aws.ToString(o.Key), s.prefix), "/"))
		}
	}
	return keys, nil
}

// DatasetPrefix is the full key prefix of everything under a dataset
// root, slash-terminated so a sibling whose name starts alike is not
// included.
func (s *Sink) DatasetPrefix(root string) string {
	return s.key(root) + "/"
}

// Prefix is the full key prefix of the destination ("" for a whole
// bucket), slash-terminated when not empty.
func (s *Sink) Prefix() string {
	if s.prefix == "" {
		return ""
	}
	return strings.TrimSuffix(s.prefix, "/") + "/"
}

// UploadsUnder lists the multipart uploads whose full key starts with
// prefix (a DatasetPrefix or Prefix).
func (s *Sink) UploadsUnder(ctx context.Context, prefix string) ([]pipeline.PendingUpload, error) {
	return s.pendingUploads(ctx, prefix)
}

// PendingUploads lists the multipart uploads under rel that were started
// and neither completed nor aborted.
func (s *Sink) PendingUploads(ctx context.Context, rel string) ([]pipeline.PendingUpload, error) {
	return s.pendingUploads(ctx, s.key(rel))
}

func (s *Sink) pendingUploads(ctx context.Context, prefix string) ([]pipeline.PendingUpload, error) {
	// The whole bucket is listed and filtered here: MinIO answers a
	// ListMultipartUploads prefix only when it is a whole object key (any
	// other prefix lists nothing), so a prefix sent to the server would
	// hide exactly the uploads a sweep is looking for.
	var ups []pipeline.PendingUpload
	in := &s3.ListMultipartUploadsInput{Bucket: &s.bucket}
	for {
		out, err := s.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list multipart uploads %s: %w", prefix, err)
		}
		for _, u := range out.Uploads {
			key, id := aws.ToString(u.Key), aws.ToString(u.UploadId)
			if !strings.HasPrefix(key, prefix) {
				continue
			}
			ghost, err := s.ghostUpload(ctx, key, id)
			if err != nil {
				return nil, fmt.Errorf("list multipart uploads %s: %w", prefix, err)
			}
			if !ghost {
				ups = append(ups, pipeline.PendingUpload{Key: key, ID: id, Initiated: aws.ToTime(u.Initiated)})
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return ups, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// ghostUpload reports whether a listed upload does not exist: the pinned
// MinIO can go on listing an upload whose CompleteMultipartUpload was cut
// off by a dying client and then raced by an abort (a restart's sweep after
// SIGKILL): ListParts answers NoSuchUpload, AbortMultipartUpload answers
// 204 and changes nothing, and the listing keeps the id for good (up to 3
// in 200 trials of that race). Such an entry holds no parts and no request can
// remove it; kept, it would be "aborted" by every sweep and counted as a
// leak by every audit. Only a definite NoSuchUpload makes a ghost: any
// other failure is returned, so a sweep retries rather than skip a real
// upload.
func (s *Sink) ghostUpload(ctx context.Context, key, id string) (bool, error) {
	_, err := s.client.ListParts(ctx, &s3.ListPartsInput{Bucket: &s.bucket, Key: &key, UploadId: &id, MaxParts: aws.Int32(1)})
	switch {
	case err == nil:
		return false, nil
	case noSuchUpload(err):
		return true, nil
	}
	return false, fmt.Errorf("upload %s of %s: %w", id, key, err)
}

// AbortUpload aborts one multipart upload; one already gone is fine.
func (s *Sink) AbortUpload(ctx context.Context, key, id string) error {
	_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &key, UploadId: &id})
	if err != nil && noSuchUpload(err) {
		return nil
	}
	return err
}

// RemoveAll deletes every object under a destination-relative prefix (a
// dataset root), the group document first so no reader trusts what
// remains meanwhile.
func (s *Sink) RemoveAll(ctx context.Context, rel string) error {
	if err := s.Delete(ctx, path.Join(rel, "zarr.json")); err != nil {
		return err
	}
	keys, err := s.List(ctx, rel)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := s.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// objectOptions are the storage class, encryption and tags every object
// of the destination gets (each nil or empty when not configured).
type objectOptions struct {
	class   types.StorageClass
	sse     types.ServerSideEncryption
	kmsKey  *string
	tagging *string
}

func (s *Sink) objectOptions() objectOptions {
	var o objectOptions
	o.class = types.StorageClass(s.cfg.StorageClass)
	o.sse = types.ServerSideEncryption(s.cfg.SSE)
	if s.cfg.SSEKMSKeyID != "" {
		o.kmsKey = aws.String(s.cfg.SSEKMSKeyID)
	}
	if len(s.cfg.Tags) > 0 {
		v := url.Values{}
		for k, val := range s.cfg.Tags {
			v.Set(k, val)
		}
		o.tagging = aws.String(v.Encode()) // S3's x-amz-tagging is a URL query string
	}
	return o
}

func (o objectOptions) put(in *s3.PutObjectInput) {
	in.StorageClass, in.ServerSideEncryption, in.SSEKMSKeyId, in.Tagging = o.class, o.sse, o.kmsKey, o.tagging
}

func (o objectOptions) create(in *s3.CreateMultipartUploadInput) {
	in.StorageClass, in.ServerSideEncryption, in.SSEKMSKeyId, in.Tagging = o.class, o.sse, o.kmsKey, o.tagging
}
