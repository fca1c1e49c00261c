package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Daemon is the daemon's configuration file (systemd/zspool.yaml is the
// commented example), parsed, defaulted and validated. After ParseDaemon
// returns without error every field holds its final value: directories are
// absolute and clean, derived defaults (failed_dir, release.archive_dir)
// are filled in, and ${CREDENTIALS_DIRECTORY} in credentials_file is
// expanded.
//
// The file holds no secrets, and ParseDaemon refuses keys that look like
// one. S3 credentials come from the AWS SDK's default chain (the
// environment's AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN, AWS_PROFILE, the shared credentials files, an
// instance role), or from destination.credentials_file, typically a
// systemd credential (LoadCredential=). The environment never overrides a
// setting of this file: the parser reads no environment variable except
// CREDENTIALS_DIRECTORY, and that only to expand it in credentials_file.
//
// A field tagged secret:"true" (there is none today) is masked by Redacted
// and by MarshalYAML, and its value is kept out of every error message.
type Daemon struct {
	SpoolDir        string      `yaml:"spool_dir"`              // required, absolute: where instruments drop raw files
	StateDir        string      `yaml:"state_dir"`              // required, absolute, not spool_dir nor inside it: journal, claimed files
	FailedDir       string      `yaml:"failed_dir"`             // default <state_dir>/failed: bad input and its .error.json
	Destination     Destination `yaml:"destination"`            // where datasets go
	Engine          string      `yaml:"engine"`                 // auto (default), cpu, gpu
	ZstdEncoder     string      `yaml:"zstd_encoder,omitempty"` // empty (default): the engine's own; klauspost, window (zstdlit's windowed encoder) or segmented (zstdlit, the GPU encoder's reference; lit is its old name)
	ZstdChecksum    bool        `yaml:"zstd_checksum"`          // default false: append each zstd frame's XXH64 content checksum
	Overwrite       bool        `yaml:"overwrite"`              // default false: refuse an acquisition whose dataset already exists at the destination
	ConcurrentJobs  int         `yaml:"concurrent_jobs"`        // default 1, 1…64: raw files converted at once
	MemoryBudget    Size        `yaml:"memory_budget"`          // default an eighth of the host's memory (cgroup limit, else RAM), at least 768 MiB; ≥ 64 MiB: the working set a plan may use
	Settle          Duration    `yaml:"settle"`                 // default 30s, 0…24h: how long a file must be unchanged before it is claimed
	RescanInterval  Duration    `yaml:"rescan_interval"`        // default 60s, 1s…24h: full rescan of the spool beside change notifications
	Release         Release     `yaml:"release"`                // what happens to a raw file once its dataset is stored
	Retry           Retry       `yaml:"retry"`                  // backoff of S3 requests and of jobs after transient faults
	Metrics         Metrics     `yaml:"metrics"`                // Prometheus endpoint
	Notify          Notify      `yaml:"notify"`                 // who hears of each stored or failed job
	LogLevel        string      `yaml:"log_level"`              // debug, info (default), warn, error
	ShutdownTimeout Duration    `yaml:"shutdown_timeout"`       // default 30s, 0…1h: how long running shards may finish after SIGTERM
}

// Argv is a command and its arguments, a YAML list of strings.
type Argv []string

// UnmarshalYAML reads a sequence of plain strings.
func (a *Argv) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("want a list: the command and its arguments, e.g. [/usr/local/bin/notify, --stored]")
	}
	out := make(Argv, 0, len(n.Content))
	for _, e := range n.Content {
		if e.Kind != yaml.ScalarNode {
			return fmt.Errorf("want strings in the list (line %d)", e.Line)
		}
		out = append(out, e.Value)
	}
	*a = out
	return nil
}

// Notify sends a JSON document per finished job (stored or failed) to a
// webhook and/or a command.
type Notify struct {
	Webhook string   `yaml:"webhook,omitempty" secret:"true"` // http(s) URL that receives a POST per job; masked by config check (it may carry a token)
	Exec    Argv     `yaml:"exec,omitempty,flow"`             // argv of a command run per job with the document on stdin
	Queue   int      `yaml:"queue"`                           // default 1000, 1…100000: notifications waiting to be sent; beyond it the oldest is dropped, with a warning
	Timeout Duration `yaml:"timeout"`                         // default 10s: per attempt; failed attempts back off up to 5 minutes, for at most an hour
}

// Release says what happens to a raw file after every object of its
// dataset is verifiably stored.
type Release struct {
	Policy     string `yaml:"policy"`                // archive (default) or delete
	ArchiveDir string `yaml:"archive_dir,omitempty"` // archive only: absolute, default <state_dir>/archive
	// ArchiveMaxAge and ArchiveMaxBytes bound the archive: the daemon
	// removes archived acquisitions oldest first once older than the age
	// or while the archive holds more than the bytes. 0: no bound.
	ArchiveMaxAge   Duration `yaml:"archive_max_age"`
	ArchiveMaxBytes Size     `yaml:"archive_max_bytes"`
}

// Retry bounds the retries after transient faults. S3 requests are retried
// inside a job; a job that still fails transiently waits and starts again,
// and is never quarantined for it.
type Retry struct {
	MaxAttempts   int      `yaml:"max_attempts"`    // per S3 request, first try included: default 10, 1…100
	MaxBackoff    Duration `yaml:"max_backoff"`     // cap of the per-request backoff: default 20s, > 0, ≤ 10m
	JobBackoff    Duration `yaml:"job_backoff"`     // first wait before a job retries: default 5s, > 0, ≤ 1h
	JobMaxBackoff Duration `yaml:"job_max_backoff"` // cap of the doubling job backoff: default 5m, job_backoff…24h
}

// WithDefaults fills every bound left at its zero value with its default.
func (r Retry) WithDefaults() Retry {
	if r.MaxAttempts == 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = DefaultMaxBackoff
	}
	if r.JobBackoff == 0 {
		r.JobBackoff = DefaultJobBackoff
	}
	if r.JobMaxBackoff == 0 {
		r.JobMaxBackoff = DefaultJobMaxBackoff
	}
	return r
}

// Metrics is the Prometheus endpoint.
type Metrics struct {
	// Listen is host:port (host may be empty: every interface), or "off"
	// when the endpoint is disabled. The file may also write listen: "".
	Listen string `yaml:"listen"` // default 127.0.0.1:9464
}

// MetricsOff is Metrics.Listen when the endpoint is disabled.
const MetricsOff = "off"

// Enabled reports whether the metrics endpoint is served.
func (m Metrics) Enabled() bool { return m.Listen != MetricsOff }

// Defaults and limits of the daemon configuration.
const (
	DefaultEngine          = "auto"
	DefaultConcurrentJobs  = 1
	MaxConcurrentJobs      = 64
	MinMemoryBudget        = 64 * MiB
	DefaultSettle          = Duration(30 * time.Second)
	MaxSettle              = Duration(24 * time.Hour)
	DefaultRescanInterval  = Duration(60 * time.Second)
	MinRescanInterval      = Duration(time.Second)
	MaxRescanInterval      = Duration(24 * time.Hour)
	DefaultLogLevel        = "info"
	DefaultShutdownTimeout = Duration(30 * time.Second)
	MaxShutdownTimeout     = Duration(time.Hour)
	DefaultReleasePolicy   = "archive"
	DefaultMaxAttempts     = 10
	MaxMaxAttempts         = 100
	DefaultMaxBackoff      = Duration(20 * time.Second)
	MaxMaxBackoff          = Duration(10 * time.Minute)
	DefaultJobBackoff      = Duration(5 * time.Second)
	MaxJobBackoff          = Duration(time.Hour)
	DefaultJobMaxBackoff   = Duration(5 * time.Minute)
	MaxJobMaxBackoff       = Duration(24 * time.Hour)
	DefaultMetricsListen   = "127.0.0.1:9464"
	DefaultNotifyQueue     = 1000
	MaxNotifyQueue         = 100000
	DefaultNotifyTimeout   = Duration(10 * time.Second)
	MaxNotifyTimeout       = Duration(5 * time.Minute)
	DefaultFailedSubdir    = "failed"  // failed_dir default, under state_dir
	DefaultArchiveSubdir   = "archive" // release.archive_dir default, under state_dir

	// MaxDaemonFileSize bounds the file LoadDaemon reads.
	MaxDaemonFileSize = 1 << 20
)

var (
	engines         = []string{"auto", "cpu", "gpu"}
	logLevels       = []string{"debug", "info", "warn", "error"}
	releasePolicies = []string{"archive", "delete"}
)

// credentialsDirVar is the one environment variable the parser reads:
// systemd sets it for a unit with LoadCredential= to the directory that
// holds the unit's credentials.
const credentialsDirVar = "CREDENTIALS_DIRECTORY"

// defaultDaemon is the configuration before the file is applied. Fields
// whose default derives from another field (failed_dir, archive_dir) stay
// empty here and are filled in by validation.
func defaultDaemon() Daemon {
	return Daemon{
		Destination:     Destination{}.WithDefaults(),
		Engine:          DefaultEngine,
		ConcurrentJobs:  DefaultConcurrentJobs,
		MemoryBudget:    DefaultMemoryBudget(),
		Settle:          DefaultSettle,
		RescanInterval:  DefaultRescanInterval,
		Release:         Release{Policy: DefaultReleasePolicy},
		Retry:           Retry{}.WithDefaults(),
		Metrics:         Metrics{Listen: DefaultMetricsListen},
		Notify:          Notify{Queue: DefaultNotifyQueue, Timeout: DefaultNotifyTimeout},
		LogLevel:        DefaultLogLevel,
		ShutdownTimeout: DefaultShutdownTimeout,
	}
}

// ParseDaemon parses, defaults and validates the daemon configuration.
//
// The document must be exactly one YAML mapping. Decoding is strict, as
// yaml.v3's Decoder.KnownFields(true) and more: unknown, misspelt and
// repeated keys are errors at every level, and so are settings without a
// value (remove the key to take its default; a section whose settings are
// all commented out is fine), merge keys, integers where a duration is
// wanted, and fractions where an integer is. A key that looks like a secret
// (secret_key, aws_secret_access_key, password, token, …) is refused with
// a message that says where credentials belong, and its value appears in
// no message.
//
// Errors about the document as a whole (empty, not YAML, more than one
// document, not a mapping) are plain errors that name the line where yaml
// does. Everything else is a *FieldError, all of them joined with
// errors.Join; each names the field's path ("destination.part_size") and,
// where the file gives it, its line.
func ParseDaemon(data []byte) (*Daemon, error) {
	return parseDaemon(data, os.LookupEnv)
}

// LoadDaemon reads and parses the configuration file at path. The file may
// be at most 1 MiB. Every error names the path.
func LoadDaemon(path string) (*Daemon, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError: names the path
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxDaemonFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxDaemonFileSize {
		return nil, fmt.Errorf("%s: larger than %s; is this the config file?", path, Size(MaxDaemonFileSize))
	}
	d, err := ParseDaemon(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

func parseDaemon(data []byte, lookupEnv func(string) (string, bool)) (*Daemon, error) {
	root, err := readYAMLDocument(data)
	if err != nil {
		return nil, err
	}
	d := defaultDaemon()
	w := newDaemonWalk()
	w.mapping(root, reflect.ValueOf(&d).Elem(), "")
	if len(w.p) == 0 {
		if err := crossCheckStrict(data, &d); err != nil {
			return nil, err
		}
	}
	w.validate(&d, lookupEnv)
	if len(w.p) > 0 {
		return nil, errors.Join(w.p...)
	}
	return &d, nil
}

// readYAMLDocument returns the top-level mapping of the only document in
// data.
func readYAMLDocument(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return nil, errors.New("config is empty: want a YAML mapping of settings (see systemd/zspool.yaml)")
	case err != nil:
		return nil, syntaxError(err, data)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxError(err, data)
	default:
		return nil, fmt.Errorf("config holds more than one YAML document (the second starts on line %d); want exactly one", documentLine(&next))
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, errors.New("config is empty: want a YAML mapping of settings (see systemd/zspool.yaml)")
		}
		root = root.Content[0]
	}
	root = resolveAlias(root)
	if root.Kind != yaml.MappingNode {
		if isNullNode(root) {
			return nil, errors.New("config is empty: want a YAML mapping of settings (see systemd/zspool.yaml)")
		}
		return nil, fmt.Errorf("config must be a YAML mapping of settings, got %s (line %d)", describeNode(root, false), root.Line)
	}
	return root, nil
}

// documentLine is the line where document n starts.
func documentLine(n *yaml.Node) int {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 && n.Content[0].Line > 0 {
		return n.Content[0].Line
	}
	return n.Line
}

// syntaxError is a yaml parse error, which already names the line, with a
// hint for the most common cause of its least helpful message.
func syntaxError(err error, data []byte) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if strings.Contains(msg, "cannot start any token") && bytes.ContainsRune(data, '\t') {
		msg += " (a tab? YAML indents with spaces only)"
	}
	return fmt.Errorf("config is not valid YAML: %s", msg)
}

// crossCheckStrict decodes data again with yaml.v3's own strict decoder
// (KnownFields(true)) and checks that it reads what the walk read. The walk
// exists to report every problem at once, each with its path and without
// secret values; this guard keeps it from accepting anything yaml.v3
// refuses, or reading a value differently.
func crossCheckStrict(data []byte, walked *Daemon) error {
	d := defaultDaemon()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if !reflect.DeepEqual(d, *walked) {
		return errors.New("config: internal error: yaml.v3's strict decoder reads this file differently from the validator; please report it")
	}
	return nil
}
