// Package destination opens where datasets go — a local directory or an
// S3-compatible bucket — from one description shared by the CLI flags and
// the daemon's config file.
package destination

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/s3sink"
	"github.com/zspool/zspool/zarr"
)

// Dest is written through pipeline.Sink and read back through zarr.Store.
type Dest interface {
	pipeline.Sink
	zarr.Store
}

// Spec describes a destination: a directory, file://DIR or
// s3://bucket/prefix, with the S3 options.
type Spec struct {
	URL                string
	Endpoint           string
	Region             string
	PathStyle          bool
	CABundle           string
	Profile            string
	CredentialsFile    string
	PartSize           int64
	PartsInFlight      int
	MaxAttempts        int
	MaxBackoff         time.Duration
	NoRequestChecksums bool
	ConditionalWrites  string
	OnRetry            func(error) // S3 only: called before every retried request, with its failure
	StorageClass       string
	SSE                string
	SSEKMSKeyID        string
	Tags               map[string]string
}

// Open opens the destination; an S3 one is probed (bucket, credentials,
// conditional writes) before anything is written.
func Open(ctx context.Context, log *zap.Logger, s Spec) (Dest, error) {
	switch {
	case s.URL == "":
		return nil, fmt.Errorf("%w: no destination given", s3sink.ErrConfig)
	case strings.HasPrefix(s.URL, "s3://"):
		return s3sink.New(ctx, log, s3sink.Config{
			URL: s.URL, Endpoint: s.Endpoint, Region: s.Region, PathStyle: s.PathStyle,
			CABundle: s.CABundle, Profile: s.Profile, CredentialsFile: s.CredentialsFile,
			PartSize: s.PartSize, PartsInFlight: s.PartsInFlight, MaxAttempts: s.MaxAttempts,
			MaxBackoff: s.MaxBackoff, NoRequestChecksums: s.NoRequestChecksums,
			ConditionalWrites: s.ConditionalWrites, OnRetry: s.OnRetry,
			StorageClass: s.StorageClass, SSE: s.SSE, SSEKMSKeyID: s.SSEKMSKeyID, Tags: s.Tags,
		})
	case strings.HasPrefix(s.URL, "file://"):
		return localfs.New(strings.TrimPrefix(s.URL, "file://")), nil
	case strings.Contains(s.URL, "://"):
		return nil, fmt.Errorf("%w: destination %s: want a directory, file://DIR or s3://bucket/prefix", s3sink.ErrConfig, s.URL)
	}
	return localfs.New(s.URL), nil
}

// PlanMemory fills the plan options with what the destination holds.
func PlanMemory(d Dest, o *pipeline.Options) {
	if s, ok := d.(*s3sink.Sink); ok {
		o.ShardBuffer = s.ShardBuffer()
		o.SinkFixed = s.FixedMemory()
	}
}

// Describe names a dataset inside a destination for messages.
func Describe(d Dest, root string) string {
	switch v := d.(type) {
	case *s3sink.Sink:
		return strings.TrimSuffix(v.URL(), "/") + "/" + root
	case *localfs.Dir:
		return filepath.Join(v.Root(), root)
	}
	return root
}

// SplitDataset splits a dataset argument into its destination and the
// dataset's root key: s3://bucket/prefix/acq.ome.zarr or dir/acq.ome.zarr.
func SplitDataset(arg string) (destURL, root string) {
	arg = strings.TrimSuffix(arg, "/")
	if rest, ok := strings.CutPrefix(arg, "s3://"); ok {
		dir, base := path.Split(rest)
		return "s3://" + strings.TrimSuffix(dir, "/"), base
	}
	arg = strings.TrimPrefix(arg, "file://")
	return filepath.Dir(arg), filepath.Base(arg)
}

// RemoveDataset deletes a stored dataset (overwrite: true).
func RemoveDataset(ctx context.Context, d Dest, root string) error {
	r, ok := d.(interface {
		RemoveAll(ctx context.Context, prefix string) error
	})
	if !ok {
		return fmt.Errorf("%s: this destination cannot remove a dataset", root)
	}
	if err := r.RemoveAll(ctx, root); err != nil {
		return fmt.Errorf("removing %s: %w", Describe(d, root), err)
	}
	return nil
}
