package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/zspool/zspool/destination"
	"github.com/zspool/zspool/s3sink"
)

// s3Flags are the options of an s3:// destination.
type s3Flags struct {
	endpoint, region, caBundle, profile, credsFile, conditional string
	pathStyle, noChecksums                                      bool
	partsInFlight, maxAttempts                                  int
	maxBackoff                                                  time.Duration
	storageClass, sse, kmsKey                                   string
	tags                                                        []string // key=value
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
	fs.StringVar(&f.storageClass, "storage-class", "", "storage class of every object (STANDARD, STANDARD_IA, …); empty: the bucket's default")
	fs.StringVar(&f.sse, "sse", "", "server-side encryption: AES256 (SSE-S3) or aws:kms (SSE-KMS); empty: the bucket's default")
	fs.StringVar(&f.kmsKey, "sse-kms-key-id", "", "with --sse aws:kms: the KMS key id or ARN")
	fs.StringArrayVar(&f.tags, "tag", nil, "object tag key=value on every object (repeat for more)")
}

// writeOnly are the flags that shape writes: commands that only read hide
// them.
var writeOnly = []string{"max-parts-in-flight", "conditional-writes", "storage-class", "sse", "sse-kms-key-id", "tag"}

// tagMap reads the --tag key=value flags.
func (f *s3Flags) tagMap() (map[string]string, error) {
	if len(f.tags) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range f.tags {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--tag %q: want key=value", kv)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("--tag %q: key %q given twice", kv, k)
		}
		m[k] = v
	}
	return m, nil
}

// openDest opens a local directory (a path or file://path) or an s3://
// destination, probing the latter before anything is written.
func openDest(ctx context.Context, log *zap.Logger, url string, sf *s3Flags, partSize int64) (destination.Dest, error) {
	if url == "" {
		return nil, fmt.Errorf("--dest is required")
	}
	tags, err := sf.tagMap()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", s3sink.ErrConfig, err)
	}
	if !strings.HasPrefix(url, "s3://") && (sf.storageClass != "" || sf.sse != "" || sf.kmsKey != "" || tags != nil) {
		return nil, fmt.Errorf("%w: --storage-class, --sse, --sse-kms-key-id and --tag apply to an s3:// destination only", s3sink.ErrConfig)
	}
	return destination.Open(ctx, log, destination.Spec{
		URL: url, Endpoint: sf.endpoint, Region: sf.region, PathStyle: sf.pathStyle,
		CABundle: sf.caBundle, Profile: sf.profile, CredentialsFile: sf.credsFile,
		PartSize: partSize, PartsInFlight: sf.partsInFlight, MaxAttempts: sf.maxAttempts,
		MaxBackoff: sf.maxBackoff, NoRequestChecksums: sf.noChecksums, ConditionalWrites: sf.conditional,
		StorageClass: sf.storageClass, SSE: sf.sse, SSEKMSKeyID: sf.kmsKey, Tags: tags,
	})
}
