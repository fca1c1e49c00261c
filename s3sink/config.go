// Package s3sink is the S3-compatible destination (AWS S3, MinIO, Ceph,
// versitygw): each shard streamed as one multipart upload whose parts leave
// as they fill, a whole-object CRC (CRC-32C or CRC-64/NVME) checked by
// HeadObject after completion, conditional writes where the endpoint
// honours them, and the same objects read back as a zarr.Store.
package s3sink

import (
	"errors"
	"fmt"
	"time"

	"github.com/zspool/zspool/config"
)

// S3's own limits, which no option changes.
const (
	MaxParts     = 10000   // parts of one multipart upload
	MaxObject    = 5 << 40 // bytes of one object
	probeTimeout = 10 * time.Second
)

// Config is one S3 destination. Its options are config.Destination, the
// one declaration the daemon file's destination: section and the command
// line's flags share, with the request retry bounds of retry:. No field is
// a secret: credentials come from the SDK's default chain or from
// CredentialsFile.
type Config struct {
	config.Destination
	Retry        config.Retry
	ProbeTimeout time.Duration // bound on the startup checks; 0: 10 s
	OnRetry      func(error)   // called before every retried request, with the failure that caused it
}

// withDefaults fills what was left unset with the declared defaults.
func (c Config) withDefaults() Config {
	c.Destination = c.Destination.WithDefaults()
	// With no budget to size it by here (destination.Open sizes it from
	// the plan's), config's one rule gives its floor.
	c.MaxPartsInFlight = c.PartsInFlight(0)
	c.Retry = c.Retry.WithDefaults()
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = probeTimeout
	}
	return c
}

// check refuses what needs no network to refuse: the url and every option,
// with config's one wording.
func (c Config) check() (bucket, prefix string, err error) {
	bucket, prefix, err = config.ParseS3URL(c.URL)
	if err != nil {
		return "", "", fmt.Errorf("destination %w", err)
	}
	var errs []error
	for _, p := range c.OptionProblems() {
		errs = append(errs, &p)
	}
	if err := errors.Join(errs...); err != nil {
		return "", "", err
	}
	return bucket, prefix, nil
}
