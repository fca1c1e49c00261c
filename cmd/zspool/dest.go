package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/destination"
)

// destFlags bind the --dest options to the fields of config.Destination and
// config.Retry, where each is declared, defaulted and checked once: a flag
// here only names a field and says what it does.
type destFlags struct {
	dst   config.Destination
	retry config.Retry
	tags  []string // --tag key=value, read into dst.Tags
}

func newDestFlags(fs *pflag.FlagSet) *destFlags {
	f := &destFlags{dst: config.Destination{}.WithDefaults(), retry: config.Retry{}.WithDefaults()}
	d := &f.dst
	fs.StringVar(&d.Endpoint, "endpoint", d.Endpoint, "S3 endpoint URL (MinIO, Ceph, …); empty = AWS")
	fs.StringVar(&d.Region, "region", d.Region, "S3 region")
	fs.BoolVar(&d.PathStyle, "path-style", d.PathStyle, "bucket in the URL path (MinIO, Ceph)")
	fs.StringVar(&d.CABundle, "ca-bundle", d.CABundle, "PEM file of extra CAs to trust")
	fs.StringVar(&d.Profile, "profile", d.Profile, "shared-config profile for credentials")
	fs.StringVar(&d.CredentialsFile, "credentials-file", d.CredentialsFile, "shared-credentials (INI) file, e.g. $CREDENTIALS_DIRECTORY/s3")
	fs.Var(&d.PartSize, "part-size", "S3 multipart part size (min 5MiB); a shard must fit in 10,000 parts")
	fs.IntVar(&d.MaxPartsInFlight, "max-parts-in-flight", d.MaxPartsInFlight, "UploadPart requests at once (0: from the memory budget, a quarter of it in parts, 8…64)")
	fs.IntVar(&f.retry.MaxAttempts, "max-attempts", f.retry.MaxAttempts, "attempts per S3 request, first included")
	fs.DurationVar((*time.Duration)(&f.retry.MaxBackoff), "max-backoff", time.Duration(f.retry.MaxBackoff), "cap of the backoff between attempts")
	fs.BoolVar(&d.NoRequestChecksums, "no-request-checksums", d.NoRequestChecksums, "only send checksums an operation requires (older S3 servers)")
	fs.StringVar(&d.ConditionalWrites, "conditional-writes", d.ConditionalWrites, "If-None-Match: * on writes: auto (probe), on, off")
	fs.StringVar(&d.Checksum, "checksum", d.Checksum, "each object's whole-object checksum, proven after it is stored: "+strings.Join(config.ChecksumChoices, " or "))
	fs.StringVar(&d.StorageClass, "storage-class", "", "storage class of every object (STANDARD, STANDARD_IA, …); empty: the bucket's default")
	fs.StringVar(&d.SSE, "sse", "", "server-side encryption: AES256 (SSE-S3) or aws:kms (SSE-KMS); empty: the bucket's default")
	fs.StringVar(&d.SSEKMSKeyID, "sse-kms-key-id", "", "with --sse aws:kms: the KMS key id or ARN")
	fs.StringArrayVar(&f.tags, "tag", nil, "object tag key=value on every object (repeat for more)")
	return f
}

// writeOnly are the flags that shape writes: commands that only read hide
// them.
var writeOnly = []string{"part-size", "max-parts-in-flight", "conditional-writes", "checksum", "storage-class", "sse", "sse-kms-key-id", "tag"}

// config is the destination the flags describe, checked: its options with
// config's one wording, as --flag: message.
func (f *destFlags) config(url string) (destination.Config, error) {
	c := destination.Config{Destination: f.dst, Retry: f.retry}
	c.URL = url
	if len(f.tags) > 0 {
		c.Tags = config.Tags{}
		for _, kv := range f.tags {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return c, fmt.Errorf("--tag %q: want key=value", kv)
			}
			if _, dup := c.Tags[k]; dup {
				return c, fmt.Errorf("--tag %q: key %q given twice", kv, k)
			}
			c.Tags[k] = v
		}
	}
	var errs []error
	for _, p := range c.OptionProblems() {
		if p.Field == "" {
			errs = append(errs, errors.New("--storage-class, --sse, --sse-kms-key-id and --tag apply to an s3:// destination only"))
			continue
		}
		errs = append(errs, fmt.Errorf("--%s (%s): %s", flagName(p.Field), p.Field, p.Msg))
	}
	return c, errors.Join(errs...)
}

// flagName is the flag of a destination option's key.
func flagName(key string) string {
	if key == "tags" {
		return "tag"
	}
	return strings.ReplaceAll(key, "_", "-")
}

// openDest opens a local directory (a path or file://path) or an s3://
// destination, probing the latter before anything is written; budget (0:
// the default) sizes an S3 store's parts in flight.
func openDest(ctx context.Context, log *zap.Logger, url string, f *destFlags, budget int64) (destination.Store, error) {
	if url == "" {
		return nil, fmt.Errorf("--dest is required")
	}
	c, err := f.config(url)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", destination.ErrConfig, err)
	}
	c.MemoryBudget = budget
	return destination.Open(ctx, log, c)
}
