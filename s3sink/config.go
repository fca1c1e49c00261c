// Package s3sink is the S3-compatible destination (AWS S3, MinIO, Ceph,
// versitygw): each shard streamed as one multipart upload whose parts leave
// as they fill, whole-object CRC64NVME checked by HeadObject after
// completion, conditional writes where the endpoint honours them, and the
// same objects read back as a zarr.Store.
package s3sink

import (
	"errors"
	"fmt"
	"github.com/zspool/zspool/config"
	"net/url"
	"strings"
	"time"
)

// Defaults.
const (
	DefaultPartSize      = 16 << 20
	MinPartSize          = 5 << 20
	DefaultPartsInFlight = 8
	DefaultMaxAttempts   = 10
	DefaultMaxBackoff    = 20 * time.Second
	DefaultProbeTimeout  = 10 * time.Second
)

// Config describes one S3 destination. No field here is a secret:
// credentials come from the SDK's default chain or from CredentialsFile.
type Config struct {
	URL                string            // s3://bucket/prefix
	Endpoint           string            // e.g. http://127.0.0.1:9000; empty = AWS
	Region             string            // default us-east-1
	PathStyle          bool              // bucket in the path, as MinIO and Ceph usually want
	CABundle           string            // PEM file of extra trusted CAs
	Profile            string            // shared-config profile
	CredentialsFile    string            // shared-credentials (INI) file, e.g. from systemd LoadCredential=
	PartSize           int64             // multipart part size, ≥ 5 MiB
	PartsInFlight      int               // UploadPart requests at once, across every shard of this sink
	MaxAttempts        int               // per request, first try included
	MaxBackoff         time.Duration     // cap of the exponential backoff between attempts
	ProbeTimeout       time.Duration     // bound on the startup checks
	NoRequestChecksums bool              // older servers: send checksums only where an operation requires them
	ConditionalWrites  string            // auto (probe), on, off: If-None-Match: * on PutObject and CompleteMultipartUpload
	OnRetry            func(error)       // called before every retried request, with the failure that caused it
	StorageClass       string            // storage class of every object; empty: the bucket's default
	SSE                string            // AES256 or aws:kms; empty: the bucket's default
	SSEKMSKeyID        string            // aws:kms: the key id or ARN; empty: the account's default key
	Tags               map[string]string // object tags on every object
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.PartSize == 0 {
		c.PartSize = DefaultPartSize
	}
	if c.PartsInFlight <= 0 {
		c.PartsInFlight = DefaultPartsInFlight
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = DefaultProbeTimeout
	}
	if c.ConditionalWrites == "" {
		c.ConditionalWrites = "auto"
	}
	return c
}

// Validate checks the fields that need no network.
func (c Config) Validate() error {
	if ps := config.ObjectOptionsProblems(c.StorageClass, c.SSE, c.SSEKMSKeyID, c.Tags); len(ps) > 0 {
		return fmt.Errorf("%s: %w", ps[0].Field, errors.New(ps[0].Msg))
	}
	if _, _, err := ParseURL(c.URL); err != nil {
		return err
	}
	if c.PartSize < MinPartSize {
		return fmt.Errorf("part_size %d bytes is below S3's minimum of 5 MiB", c.PartSize)
	}
	switch c.ConditionalWrites {
	case "auto", "on", "off":
	default:
		return fmt.Errorf("conditional_writes: %q is not one of auto, on, off", c.ConditionalWrites)
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("endpoint %q: want http(s)://host[:port]", c.Endpoint)
		}
	}
	return nil
}

// ParseURL splits s3://bucket/prefix into bucket and prefix (no leading or
// trailing slash).
func ParseURL(s string) (bucket, prefix string, err error) {
	shown := config.RedactURL(s) // a query may hold a presigned signature
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return "", "", fmt.Errorf("destination %q: want s3://bucket/prefix", shown)
	}
	if strings.ContainsAny(rest, "?#") {
		return "", "", fmt.Errorf("destination %q: has a query or fragment; want s3://bucket/prefix", shown)
	}
	if strings.Contains(strings.SplitN(rest, "/", 2)[0], "@") {
		return "", "", fmt.Errorf("destination %q: must not carry credentials; use the environment or a credentials file", shown)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	prefix = strings.Trim(prefix, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("destination %q: no bucket", shown)
	}
	if msg := config.BucketNameProblem(bucket); msg != "" {
		return "", "", fmt.Errorf("destination %q: bucket %q %s", shown, bucket, msg)
	}
	for _, part := range strings.Split(prefix, "/") {
		if part == "." || part == ".." {
			return "", "", fmt.Errorf("destination %q: prefix has a . or .. component", shown)
		}
	}
	return bucket, prefix, nil
}
