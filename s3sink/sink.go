package s3sink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/pipeline"
	"go.uber.org/zap"
)

// Sink is one S3 destination. It is safe for concurrent use; its part
// semaphore bounds UploadPart requests across every shard it writes.
type Sink struct {
	cfg         Config
	bucket      string
	prefix      string
	client      *s3.Client
	log         *zap.Logger
	sem         chan struct{}
	parts       sync.Pool // *[]byte of PartSize
	conditional bool      // send If-None-Match: * on PutObject and CompleteMultipartUpload
	sum         checksum  // every object's whole-object checksum

	hooks pipeline.UploadHooks
}

// The S3 store states its limits to the planner.
var _ pipeline.Limiter = (*Sink)(nil)

// TrackUploads sets the hooks that see every multipart upload about to
// start, started and finished; call it before the first write.
func (s *Sink) TrackUploads(h pipeline.UploadHooks) { s.hooks = h }

// ErrConfig marks options that can never work (a bad URL, a missing CA
// bundle or credentials file), as opposed to a destination that did not
// answer as hoped and may later.
var ErrConfig = errors.New("s3 destination options")

// New builds the client, then checks — within ProbeTimeout — that the
// bucket exists and the credentials work, and (conditional_writes auto)
// whether the endpoint honours If-None-Match. A destination that cannot
// work fails here, not in the middle of a job.
func New(ctx context.Context, log *zap.Logger, cfg Config) (*Sink, error) {
	cfg = cfg.withDefaults()
	bucket, prefix, err := cfg.check()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	client, err := newClient(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	sum, err := checksumNamed(cfg.Checksum)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	s := &Sink{
		cfg: cfg, bucket: bucket, prefix: prefix, client: client, log: log,
		sem: make(chan struct{}, cfg.MaxPartsInFlight), sum: sum,
	}
	s.parts.New = func() any { b := make([]byte, 0, cfg.PartSize); return &b }
	if err := s.checkBucket(ctx); err != nil {
		return nil, err
	}
	switch cfg.ConditionalWrites {
	case "on":
		s.conditional = true
	case "auto":
		if s.conditional, err = s.probeConditional(ctx); err != nil {
			return nil, err
		}
	}
	log.Info("s3 destination ready", zap.String("url", cfg.URL), zap.String("endpoint", endpointName(cfg)),
		zap.Bool("conditional_writes", s.conditional), zap.Int64("part_size", int64(cfg.PartSize)),
		zap.Int("parts_in_flight", cfg.MaxPartsInFlight), zap.String("checksum", sum.name))
	return s, nil
}

func endpointName(cfg Config) string {
	if cfg.Endpoint == "" {
		return "aws"
	}
	return cfg.Endpoint
}

// newClient builds the SDK client. Credentials come from the default chain
// (environment, shared config/profile, web identity, IMDS) or from the
// credentials file; they are never copied into Config, logs or errors.
func newClient(ctx context.Context, cfg Config) (*s3.Client, error) {
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRegion(cfg.Region),
		// The SDK's own logger would print to stderr (ranged reads warn on
		// every call); zspool reports what matters through zap, and a
		// silent SDK logger can never leak a signed header.
		awsconfig.WithLogger(logging.Nop{}),
		awsconfig.WithClientLogMode(0),
		awsconfig.WithRetryer(func() aws.Retryer {
			std := retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.Retry.MaxAttempts
				o.MaxBackoff = time.Duration(cfg.Retry.MaxBackoff)
				// The default token bucket stops retrying after a burst of
				// failures; a flaky endpoint must slow us down, not fail us.
				o.RateLimiter = ratelimit.None
			})
			if cfg.OnRetry == nil {
				return std
			}
			return countingRetryer{std, cfg.OnRetry}
		}),
	}
	if cfg.Profile != "" {
		opts = append(opts, awsconfig.WithSharedConfigProfile(cfg.Profile))
	}
	if cfg.CredentialsFile != "" {
		if _, err := os.Stat(cfg.CredentialsFile); err != nil {
			return nil, fmt.Errorf("credentials file: %w", err)
		}
		opts = append(opts, awsconfig.WithSharedCredentialsFiles([]string{cfg.CredentialsFile}))
	}
	if cfg.CABundle != "" {
		f, err := os.Open(cfg.CABundle)
		if err != nil {
			return nil, fmt.Errorf("ca_bundle: %w", err)
		}
		defer f.Close()
		opts = append(opts, awsconfig.WithCustomCABundle(f))
	}
	if cfg.NoRequestChecksums {
		opts = append(opts,
			awsconfig.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
			awsconfig.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3 client: %w", err)
	}
	return s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	}), nil
}

// once makes a request with a single attempt: the startup checks must
// answer within seconds, not after ten backoffs.
func once(o *s3.Options) { o.RetryMaxAttempts = 1 }

func (s *Sink) checkBucket(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ProbeTimeout)
	defer cancel()
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)}, once)
	if err != nil {
		return fmt.Errorf("%s: %w", s.cfg.URL, explain(err, s.bucket, endpointName(s.cfg)))
	}
	return nil
}

// probeConditional writes a probe object twice with If-None-Match: *. An
// endpoint that honours it refuses the second write with 412; one that
// ignores the header accepts both.
func (s *Sink) probeConditional(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ProbeTimeout)
	defer cancel()
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	key := s.key(".zspool-probe-" + hex.EncodeToString(rnd[:]))
	defer s.client.DeleteObject(context.WithoutCancel(ctx), &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &key}, once)
	put := func() error {
		in := &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: strings.NewReader("probe"), IfNoneMatch: aws.String("*")}
		s.objectOptions().put(in) // a bucket policy that demands them must not refuse the probe
		_, err := s.client.PutObject(ctx, in, once)
		return err
	}
	if err := put(); err != nil {
		if httpStatus(err) == 501 || httpStatus(err) == 400 {
			return false, nil
		}
		return false, fmt.Errorf("%s: probing writes: %w", s.cfg.URL, explain(err, s.bucket, endpointName(s.cfg)))
	}
	err := put()
	switch {
	case err == nil:
		s.log.Warn("the endpoint ignores If-None-Match; writes are settled by HeadObject alone", zap.String("endpoint", endpointName(s.cfg)))
		return false, nil
	case httpStatus(err) == 412:
		return true, nil
	default:
		return false, fmt.Errorf("%s: probing conditional writes: %w", s.cfg.URL, explain(err, s.bucket, endpointName(s.cfg)))
	}
}

// key is the object key of a destination-relative key.
func (s *Sink) key(rel string) string {
	if s.prefix == "" {
		return rel
	}
	return path.Join(s.prefix, rel)
}

// URL is the destination's s3:// URL.
func (s *Sink) URL() string { return s.cfg.URL }

// Conditional reports whether writes carry If-None-Match: *.
func (s *Sink) Conditional() bool { return s.conditional }

// Limits are what an S3 destination asks of a plan: a filling part per
// open shard, the parts in flight, and shards that fit in MaxParts parts.
func (s *Sink) Limits() pipeline.Limits {
	part := int64(s.cfg.PartSize)
	return pipeline.Limits{
		ShardBuffer:   part,
		Fixed:         int64(s.cfg.MaxPartsInFlight) * part,
		MaxObject:     min(MaxParts*part, MaxObject),
		MaxObjectHint: fmt.Sprintf("S3 takes %d parts of part_size %s; or raise part_size", MaxParts, config.Size(part)),
	}
}

// Where names the object at a destination-relative key for messages.
func (s *Sink) Where(rel string) string {
	return strings.TrimSuffix(s.cfg.URL, "/") + "/" + rel
}

// countingRetryer reports each retry: RetryDelay is asked once per retried
// attempt.
type countingRetryer struct {
	aws.RetryerV2
	onRetry func(error)
}

func (r countingRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	r.onRetry(err)
	return r.RetryerV2.RetryDelay(attempt, err)
}
