// Package destination is the registry of stores: it picks the store a
// destination URL's scheme names — a local directory (localfs) or an
// S3-compatible bucket (s3sink) — and opens it from config.Destination,
// the one declaration of a destination's options that the daemon file and
// the command line share. It is the one package that knows the stores.
package destination

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/s3sink"
	"github.com/zspool/zspool/zarr"
)

// Store is an opened destination as its users see it: written through
// pipeline.Sink, read back through zarr.Store. Optional capabilities
// (pipeline.Limiter; tracking pending uploads) are asserted by the
// packages that want them.
type Store interface {
	pipeline.Sink
	zarr.Store
	// Where names the object at a destination-relative key, for messages:
	// a path, or an s3:// URL.
	Where(key string) string
	// RemoveAll deletes every object under a destination-relative prefix
	// (a dataset root), the group document first.
	RemoveAll(ctx context.Context, prefix string) error
}

// Config is what opens a destination: its URL and options, the request
// retry bounds (retry: in the daemon file, --max-attempts and
// --max-backoff on the command line), and a hook that sees every retried
// request.
type Config struct {
	config.Destination
	Retry   config.Retry
	OnRetry func(error)
	// MemoryBudget is the plan's (per job, in the daemon): it sizes an S3
	// store's parts in flight when max_parts_in_flight is 0. 0: the
	// host's default budget.
	MemoryBudget int64
}

// ErrConfig marks options that can never work (a bad URL, a missing CA
// bundle or credentials file), as opposed to a destination that did not
// answer as hoped and may later.
var ErrConfig = s3sink.ErrConfig

// Open opens the store the URL names; an S3 one is probed (bucket,
// credentials, conditional writes) before anything is written.
func Open(ctx context.Context, log *zap.Logger, c Config) (Store, error) {
	switch u := c.URL; {
	case u == "":
		return nil, fmt.Errorf("%w: no destination given", ErrConfig)
	case strings.HasPrefix(u, "s3://"):
		d := c.Destination
		budget := c.MemoryBudget
		if budget <= 0 {
			budget = int64(config.DefaultMemoryBudget())
		}
		d.MaxPartsInFlight = d.WithDefaults().PartsInFlight(budget)
		return s3sink.New(ctx, log, s3sink.Config{Destination: d, Retry: c.Retry, OnRetry: c.OnRetry})
	case strings.HasPrefix(u, "file://"):
		return localfs.New(strings.TrimPrefix(u, "file://")), nil
	case strings.Contains(u, "://"):
		return nil, fmt.Errorf("%w: destination %s: want a directory, file://DIR or s3://bucket/prefix", ErrConfig, config.RedactURL(u))
	default:
		return localfs.New(u), nil
	}
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
