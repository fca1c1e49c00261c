package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Destination is where datasets go and how to reach it: the daemon file's
// destination: section, and the same fields the --dest flags of convert,
// verify and bench bind to. Every option of a destination is declared
// here, defaulted by WithDefaults and checked by OptionProblems, once;
// the stores (localfs, s3sink) take this value as it is. The url picks
// the store; only it applies to a local directory, and the rest configure
// the S3 client.
type Destination struct {
	URL                string `yaml:"url"`                        // required: s3://bucket/prefix, file:///abs/dir, or an absolute dir
	Endpoint           string `yaml:"endpoint,omitempty"`         // http(s)://host[:port] of a non-AWS server; empty = AWS
	Region             string `yaml:"region"`                     // default us-east-1
	PathStyle          bool   `yaml:"path_style"`                 // bucket in the path, as MinIO and Ceph usually want
	CABundle           string `yaml:"ca_bundle,omitempty"`        // PEM file of extra trusted CAs (absolute in the daemon file)
	Profile            string `yaml:"profile,omitempty"`          // section of the shared config / credentials file
	CredentialsFile    string `yaml:"credentials_file,omitempty"` // shared-credentials (INI) file; in the daemon file absolute, ${CREDENTIALS_DIRECTORY} expanded
	PartSize           Size   `yaml:"part_size"`                  // default 16 MiB, 5 MiB…5 GiB: multipart part size
	MaxPartsInFlight   int    `yaml:"max_parts_in_flight"`        // 1…256 UploadPart requests at once; 0 (default): from the memory budget, see PartsInFlight
	NoRequestChecksums bool   `yaml:"no_request_checksums"`       // older servers: checksums only where an operation requires them
	Checksum           string `yaml:"checksum"`                   // crc32c (default) or crc64nvme: each object's whole-object checksum, checked after it is stored
	ConditionalWrites  string `yaml:"conditional_writes"`         // auto (default: probe), on, off: If-None-Match: * on writes
	StorageClass       string `yaml:"storage_class,omitempty"`    // S3 storage class of every object (STANDARD, STANDARD_IA, …); empty: the bucket's default
	SSE                string `yaml:"sse,omitempty"`              // server-side encryption: AES256 (SSE-S3) or aws:kms (SSE-KMS); empty: the bucket's default
	SSEKMSKeyID        string `yaml:"sse_kms_key_id,omitempty"`   // aws:kms only: the KMS key id or ARN; empty: the account's default key
	Tags               Tags   `yaml:"tags,omitempty"`             // object tags (key: value) on every object
}

// Defaults and limits of a destination's options.
const (
	DefaultRegion           = "us-east-1"
	DefaultPartSize         = 16 * MiB
	MinPartSize             = 5 * MiB // S3's minimum for every part but the last
	MaxPartSize             = 5 * GiB // S3's maximum part size
	DefaultMaxPartsInFlight = 8       // with no budget to size it by, and the least the budget picks
	AutoMaxPartsInFlight    = 64      // the most the budget picks: a local server on 16 cores gave 0.77× the transfer manager at 32, 0.81× at 64
	MaxPartsInFlight        = 256
	DefaultConditional      = "auto"
	DefaultChecksum         = "crc32c"
	MaxTags                 = 10
)

var conditionalChoices = []string{"auto", "on", "off"}

// ChecksumChoices are the whole-object checksums an S3 destination can ask
// the store to keep and prove: CRC-32C, computed in hardware on both ends,
// and CRC-64/NVME, twice as long but computed from byte tables by some
// servers (versitygw), where it costs them a CPU-second per GiB.
var ChecksumChoices = []string{"crc32c", "crc64nvme"}

// WithDefaults fills every option left at its zero value with its default.
func (d Destination) WithDefaults() Destination {
	if d.Region == "" {
		d.Region = DefaultRegion
	}
	if d.PartSize == 0 {
		d.PartSize = DefaultPartSize
	}
	if d.ConditionalWrites == "" {
		d.ConditionalWrites = DefaultConditional
	}
	if d.Checksum == "" {
		d.Checksum = DefaultChecksum
	}
	return d
}

// PartsInFlight is how many UploadPart requests a plan with this memory
// budget keeps in flight: max_parts_in_flight when set, else as many parts
// as a quarter of the budget holds, within DefaultMaxPartsInFlight…
// AutoMaxPartsInFlight. Each costs a part buffer for as long as it flies;
// more of them are what fills a fast link.
func (d Destination) PartsInFlight(budget int64) int {
	if d.MaxPartsInFlight > 0 {
		return d.MaxPartsInFlight
	}
	part := int64(d.PartSize)
	if part <= 0 {
		part = int64(DefaultPartSize)
	}
	return int(min(max(budget/4/part, DefaultMaxPartsInFlight), AutoMaxPartsInFlight))
}

// OptionProblems checks every option but the url and the file paths
// (whose rules differ between the daemon file, where they must be
// absolute, and the command line): the endpoint, names, sizes, choices and
// object options. Each problem names its key as the daemon file spells it.
// The object options apply to an s3:// url only.
func (d Destination) OptionProblems() []FieldError {
	var out []FieldError
	add := func(field, format string, args ...any) {
		out = append(out, FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if d.Endpoint != "" {
		if msg := endpointProblem(d.Endpoint); msg != "" {
			add("endpoint", "%s", msg)
		}
	}
	if !isToken(d.Region, "-_") {
		add("region", "%s is not a region name: want letters, digits, - and _, like us-east-1", quote(d.Region))
	}
	if d.Profile != "" && !isToken(d.Profile, "-_.+@") {
		add("profile", "%s is not a profile name: want letters, digits and - _ . + @", quote(d.Profile))
	}
	switch {
	case d.PartSize < MinPartSize:
		add("part_size", "%s is below S3's minimum of %s", d.PartSize, Size(MinPartSize))
	case d.PartSize > MaxPartSize:
		add("part_size", "%s is above S3's maximum of %s", d.PartSize, Size(MaxPartSize))
	}
	if d.MaxPartsInFlight < 0 || d.MaxPartsInFlight > MaxPartsInFlight {
		add("max_parts_in_flight", "%d is not within %d…%d (or 0: from the memory budget)", d.MaxPartsInFlight, 1, MaxPartsInFlight)
	}
	if !slices.Contains(conditionalChoices, d.ConditionalWrites) {
		add("conditional_writes", "%s is not one of %s", quote(d.ConditionalWrites), strings.Join(conditionalChoices, ", "))
	}
	if !slices.Contains(ChecksumChoices, d.Checksum) {
		add("checksum", "%s is not one of %s", quote(d.Checksum), strings.Join(ChecksumChoices, ", "))
	}
	set := d.StorageClass != "" || d.SSE != "" || d.SSEKMSKeyID != "" || len(d.Tags) > 0
	if set && !strings.HasPrefix(d.URL, "s3://") {
		add("", "storage_class, sse, sse_kms_key_id and tags apply to an s3:// destination only")
		return out
	}
	return append(out, objectOptionsProblems(d.StorageClass, d.SSE, d.SSEKMSKeyID, d.Tags)...)
}

// parsedDestination is a destination URL taken apart: bucket and prefix of
// s3://bucket/prefix, or the clean directory of a local destination.
type parsedDestination struct {
	bucket, prefix string
	dir            string
}

// parseDestination takes a destination URL apart, or says what is wrong
// with it. A URL that carries credentials is never quoted.
func parseDestination(s string) (parsedDestination, string) {
	const want = "want s3://bucket/prefix, file:///abs/dir or an absolute directory"
	if r, bad := hasControl(s); bad {
		return parsedDestination{}, "must not contain control characters, found " + r
	}
	scheme, rest, hasScheme := strings.Cut(s, "://")
	if !hasScheme {
		if strings.HasPrefix(s, "s3:") || strings.HasPrefix(s, "file:") {
			return parsedDestination{}, quoteURL(s) + " is missing the // after the scheme; " + want
		}
		if !filepath.IsAbs(s) {
			return parsedDestination{}, quoteURL(s) + " is a relative directory; " + want
		}
		return parsedDestination{dir: filepath.Clean(s)}, ""
	}
	if strings.Contains(strings.SplitN(rest, "/", 2)[0], "@") {
		return parsedDestination{}, "must not carry credentials (user:password@); " + secretMsg
	}
	switch scheme {
	case "s3":
		bucket, prefix, err := ParseS3URL(s)
		if err != nil {
			return parsedDestination{}, err.Error()
		}
		return parsedDestination{bucket: bucket, prefix: prefix}, ""
	case "file":
		u, err := url.Parse(s)
		if err != nil {
			return parsedDestination{}, quoteURL(s) + " is not a valid file URL; want file:///abs/dir"
		}
		if u.Host != "" && u.Host != "localhost" {
			return parsedDestination{}, quoteURL(s) + " names host " + quote(u.Host) + "; want file:///abs/dir (three slashes)"
		}
		if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			return parsedDestination{}, quoteURL(s) + " has a query or fragment; want file:///abs/dir"
		}
		if u.Path == "" || !filepath.IsAbs(u.Path) {
			return parsedDestination{}, quoteURL(s) + " has no absolute directory; want file:///abs/dir"
		}
		return parsedDestination{dir: filepath.Clean(u.Path)}, ""
	case "http", "https":
		return parsedDestination{}, quoteURL(s) + " is a server address: put it in destination.endpoint and the bucket here as s3://bucket/prefix"
	}
	return parsedDestination{}, "scheme " + quote(scheme) + " is not supported; " + want
}

// S3 returns the bucket and key prefix (no leading or trailing slash) of
// an s3:// destination; ok is false for a local one.
func (d Destination) S3() (bucket, prefix string, ok bool) {
	p, msg := parseDestination(d.URL)
	if msg != "" || p.bucket == "" {
		return "", "", false
	}
	return p.bucket, p.prefix, true
}

// LocalDir returns the clean absolute directory of a local destination
// (file:///abs/dir or /abs/dir); ok is false for an S3 one.
func (d Destination) LocalDir() (dir string, ok bool) {
	p, msg := parseDestination(d.URL)
	if msg != "" || p.dir == "" {
		return "", false
	}
	return p.dir, true
}

// ParseS3URL splits s3://bucket/prefix into its bucket and key prefix (no
// leading or trailing slash), or says what is wrong with it. A URL that
// carries credentials or a query (a presigned signature) is never quoted
// whole.
func ParseS3URL(s string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return "", "", errors.New(quoteURL(s) + ": want s3://bucket/prefix")
	}
	if strings.Contains(strings.SplitN(rest, "/", 2)[0], "@") {
		return "", "", errors.New("must not carry credentials (user:password@); " + secretMsg)
	}
	if strings.ContainsAny(rest, "?#") {
		return "", "", errors.New(quoteURL(s) + ": has a query or fragment; want s3://bucket/prefix")
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", errors.New(quoteURL(s) + ": has no bucket; want s3://bucket/prefix")
	}
	if !isToken(bucket, ".-_") {
		return "", "", errors.New(quoteURL(s) + ": bucket " + quote(bucket) + " is not a bucket name: want letters, digits, . - and _ (no port: the server goes in destination.endpoint)")
	}
	if msg := BucketNameProblem(bucket); msg != "" {
		return "", "", errors.New(quoteURL(s) + ": bucket " + quote(bucket) + " " + msg)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		for part := range strings.SplitSeq(prefix, "/") {
			switch part {
			case "":
				return "", "", errors.New(quoteURL(s) + ": has an empty component (//) in its prefix")
			case ".", "..":
				return "", "", errors.New(quoteURL(s) + ": has a . or .. component in its prefix")
			}
		}
	}
	return bucket, prefix, nil
}

// endpointProblem says what is wrong with an S3 endpoint, or "".
func endpointProblem(s string) string {
	const want = "want http(s)://host[:port], like https://minio.example.internal:9000"
	if r, bad := hasControl(s); bad {
		return "must not contain control characters, found " + r
	}
	u, err := url.Parse(s)
	if err != nil {
		if _, rest, ok := strings.Cut(s, "://"); ok && strings.Contains(strings.SplitN(rest, "/", 2)[0], "@") {
			return "must not carry credentials (user:password@); " + secretMsg
		}
		return "is not a valid URL; " + want
	}
	if u.User != nil {
		return "must not carry credentials (user:password@); " + secretMsg
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return quoteURL(s) + ": " + want
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return quoteURL(s) + " has a path, query or fragment; " + want + " (the bucket goes in destination.url)"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return quoteURL(s) + " has port " + quote(p) + "; want 1…65535"
		}
	}
	return ""
}

// objectOptionsProblems checks S3 object options; each problem names its
// option.
func objectOptionsProblems(class, sse, kmsKey string, tags map[string]string) []FieldError {
	var out []FieldError
	add := func(field, format string, args ...any) {
		out = append(out, FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if class != "" && !isToken(class, "_") {
		add("storage_class", "%s is not a storage class name (STANDARD, STANDARD_IA, INTELLIGENT_TIERING, GLACIER_IR, …)", quote(class))
	}
	switch sse {
	case "", "AES256":
		if kmsKey != "" {
			add("sse_kms_key_id", "is set, but sse is not aws:kms")
		}
	case "aws:kms":
	default:
		add("sse", "%s is not one of AES256 (SSE-S3), aws:kms (SSE-KMS)", quote(sse))
	}
	if len(tags) > MaxTags {
		add("tags", "has %d tags; S3 allows at most %d per object", len(tags), MaxTags)
	}
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch v := tags[k]; {
		case len(k) < 1 || len(k) > 128:
			add("tags", "key %s: want 1 to 128 characters", quote(k))
		case len(v) > 256:
			add("tags", "%s: a value of %d characters; S3 allows 256", quote(k), len(v))
		}
	}
	return out
}

// Tags are S3 object tags: at most 10, keys 1…128 and values 0…256
// characters.
type Tags map[string]string

// UnmarshalYAML reads a mapping of plain strings.
func (t *Tags) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("want a mapping of tag keys to values")
	}
	m := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
			return fmt.Errorf("tags: want key: value strings (line %d)", k.Line)
		}
		if _, dup := m[k.Value]; dup {
			return fmt.Errorf("tags: %q appears twice (line %d)", k.Value, k.Line)
		}
		m[k.Value] = v.Value
	}
	*t = m
	return nil
}
