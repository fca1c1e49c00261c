package main

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/s3sink"
	"github.com/zspool/zspool/zarr"
)

// dest is a destination as the commands use it: written through the
// pipeline.Sink side, read back through the zarr.Store side.
type dest interface {
	pipeline.Sink
	zarr.Store
}

// s3Flags are the options of an s3:// destination.
type s3Flags struct {
	endpoint, region, caBundle, profile, credsFile, conditional string
	pathStyle, noChecksums                                      bool
	partsInFlight, maxAttempts                                  int
	maxBackoff                                                  time.Duration
}

func (f *s3Flags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.endpoint, "endpoint", "", "S3 endpoint URL (MinIO, Ceph, …); empty = AWS")
	fs.StringVar(&f.region, "region", "us-east-1", "S3 region")
	fs.BoolVar(&f.pathStyle, "path-style", false, "bucket in the URL path (MinIO, Ceph)")
	fs.StringVar(&f.caBundle, "ca-bundle", "", "PEM file of extra CAs to trust")
	fs.StringVar(&f.profile, "profile", "", "shared-config profile for credentials")
	fs.StringVar(&f.credsFile, "credentials-file", "", "shared-credentials (INI) file, e.g. $CREDENTIALS_DIRECTORY/s3")
	fs.IntVar(&f.partsInFlight, "max-parts-in-flight", s3sink.DefaultPartsInFlight, "UploadPart requests at once")
	fs.IntVar(&f.maxAttempts, "max-attempts", s3sink.DefaultMaxAttempts, "attempts per S3 request, first included")
	fs.DurationVar(&f.maxBackoff, "max-backoff", s3sink.DefaultMaxBackoff, "cap of the backoff between attempts")
	fs.BoolVar(&f.noChecksums, "no-request-checksums", false, "only send checksums an operation requires (older S3 servers)")
	fs.StringVar(&f.conditional, "conditional-writes", "auto", "If-None-Match: * on writes: auto (probe), on, off")
}

// openDest opens a local directory (a path or file://path) or an s3://
// destination, probing the latter before anything is written.
func openDest(ctx context.Context, log *zap.Logger, spec string, sf *s3Flags, partSize int64) (dest, error) {
	switch {
	case spec == "":
		return nil, fmt.Errorf("--dest is required")
	case strings.HasPrefix(spec, "s3://"):
		return s3sink.New(ctx, log, s3sink.Config{
			URL: spec, Endpoint: sf.endpoint, Region: sf.region, PathStyle: sf.pathStyle,
			CABundle: sf.caBundle, Profile: sf.profile, CredentialsFile: sf.credsFile,
			PartSize: partSize, PartsInFlight: sf.partsInFlight, MaxAttempts: sf.maxAttempts,
			MaxBackoff: sf.maxBackoff, NoRequestChecksums: sf.noChecksums, ConditionalWrites: sf.conditional,
		})
	case strings.HasPrefix(spec, "file://"):
		return localfs.New(strings.TrimPrefix(spec, "file://")), nil
	case strings.Contains(spec, "://"):
		return nil, fmt.Errorf("destination %s: want a directory, file://DIR or s3://bucket/prefix", spec)
	}
	return localfs.New(spec), nil
}

// sinkMemory fills the plan options with what the destination holds.
func sinkMemory(d dest, o *pipeline.Options) {
	if s, ok := d.(*s3sink.Sink); ok {
		o.ShardBuffer = s.ShardBuffer()
		o.SinkFixed = s.FixedMemory()
	}
}

// describe names a dataset inside a destination for messages.
func describe(d dest, root string) string {
	switch v := d.(type) {
	case *s3sink.Sink:
		return strings.TrimSuffix(v.URL(), "/") + "/" + root
	case *localfs.Dir:
		return filepath.Join(v.Root(), root)
	}
	return root
}

// splitDataset splits a dataset argument into its destination and the
// dataset's root key: s3://bucket/prefix/acq.ome.zarr or dir/acq.ome.zarr.
func splitDataset(arg string) (destSpec, root string) {
	arg = strings.TrimSuffix(arg, "/")
	if rest, ok := strings.CutPrefix(arg, "s3://"); ok {
		dir, base := path.Split(rest)
		return "s3://" + strings.TrimSuffix(dir, "/"), base
	}
	arg = strings.TrimPrefix(arg, "file://")
	return filepath.Dir(arg), filepath.Base(arg)
}
