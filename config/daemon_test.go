package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const testCredentialsDir = "/run/credentials/zspool.service"

// fullDaemonConfig sets every field, none to its default.
const fullDaemonConfig = `# every setting, none at its default
spool_dir: /data/spool/
state_dir: /data/state
failed_dir: /data/quarantine
destination:
  url: s3://lab-bucket/scope-3/raw/
  endpoint: http://127.0.0.1:9000
  region: eu-central-1
  path_style: true
  ca_bundle: /etc/ssl/lab-ca.pem
  profile: lab
  credentials_file: ${CREDENTIALS_DIRECTORY}/s3
  part_size: 64 MiB
  max_parts_in_flight: 16
  no_request_checksums: true
  checksum: crc64nvme
  conditional_writes: off
  storage_class: STANDARD_IA
  sse: aws:kms
  sse_kms_key_id: alias/lab
  tags: {project: scope-3, retention: 5y}
engine: gpu
zstd_encoder: lit
zstd_checksum: true
overwrite: true
concurrent_jobs: 4
memory_budget: 8GiB
settle: 2m
rescan_interval: 5m
release:
  policy: archive
  archive_dir: /data/archive
  archive_max_age: 720h
  archive_max_bytes: 2 TiB
retry:
  max_attempts: 5
  max_backoff: 30s
  job_backoff: 10s
  job_max_backoff: 1h
metrics:
  listen: "[::1]:9100"
notify:
  webhook: https://lake.example.internal/hooks/zspool?token=hunter2
  exec: [/usr/local/bin/on-dataset, --json]
  queue: 50
  timeout: 3s
log_level: debug
shutdown_timeout: 2m
`

var fullDaemon = Daemon{
	SpoolDir:  "/data/spool",
	StateDir:  "/data/state",
	FailedDir: "/data/quarantine",
	Destination: Destination{
		URL:                "s3://lab-bucket/scope-3/raw/",
		Endpoint:           "http://127.0.0.1:9000",
		Region:             "eu-central-1",
		PathStyle:          true,
		CABundle:           "/etc/ssl/lab-ca.pem",
		Profile:            "lab",
		CredentialsFile:    testCredentialsDir + "/s3",
		PartSize:           64 * MiB,
		MaxPartsInFlight:   16,
		NoRequestChecksums: true,
		Checksum:           "crc64nvme",
		ConditionalWrites:  "off",
		StorageClass:       "STANDARD_IA",
		SSE:                "aws:kms",
		SSEKMSKeyID:        "alias/lab",
		Tags:               Tags{"project": "scope-3", "retention": "5y"},
	},
	Engine:         "gpu",
	ZstdEncoder:    "lit",
	ZstdChecksum:   true,
	Overwrite:      true,
	ConcurrentJobs: 4,
	MemoryBudget:   8 * GiB,
	Settle:         Duration(2 * time.Minute),
	RescanInterval: Duration(5 * time.Minute),
	Release: Release{Policy: "archive", ArchiveDir: "/data/archive",
		ArchiveMaxAge: Duration(720 * time.Hour), ArchiveMaxBytes: 2 * TiB},
	Retry: Retry{
		MaxAttempts:   5,
		MaxBackoff:    Duration(30 * time.Second),
		JobBackoff:    Duration(10 * time.Second),
		JobMaxBackoff: Duration(time.Hour),
	},
	Metrics: Metrics{Listen: "[::1]:9100"},
	Notify: Notify{Webhook: "https://lake.example.internal/hooks/zspool?token=hunter2",
		Exec: Argv{"/usr/local/bin/on-dataset", "--json"}, Queue: 50, Timeout: Duration(3 * time.Second)},
	LogLevel:        "debug",
	ShutdownTimeout: Duration(2 * time.Minute),
}

// minimalDaemonConfig gives only the required settings.
const minimalDaemonConfig = `spool_dir: /srv/spool
state_dir: /srv/state
destination:
  url: s3://bucket/prefix
`

// daemonWith is the minimal config plus top-level lines and lines under
// destination (written without their indentation).
func daemonWith(top, dest string) string {
	var b strings.Builder
	b.WriteString(minimalDaemonConfig)
	for line := range strings.Lines(dest) {
		b.WriteString("  " + line)
	}
	if dest != "" && !strings.HasSuffix(dest, "\n") {
		b.WriteString("\n")
	}
	b.WriteString(top)
	return b.String()
}

func mustParseDaemon(t *testing.T, doc string) *Daemon {
	t.Helper()
	d, err := ParseDaemon([]byte(doc))
	if err != nil {
		t.Fatalf("ParseDaemon: %v\n--- document:\n%s", err, doc)
	}
	return d
}

func TestTheFullDaemonExampleParsesToExactlyWhatItSays(t *testing.T) {
	t.Setenv(credentialsDirVar, testCredentialsDir)
	d := mustParseDaemon(t, fullDaemonConfig)
	if !reflect.DeepEqual(*d, fullDaemon) {
		t.Errorf("got\n%+v\nwant\n%+v", *d, fullDaemon)
	}
	if bucket, prefix, ok := d.Destination.S3(); !ok || bucket != "lab-bucket" || prefix != "scope-3/raw" {
		t.Errorf("S3() = %q, %q, %v; want lab-bucket, scope-3/raw, true", bucket, prefix, ok)
	}
	if _, ok := d.Destination.LocalDir(); ok {
		t.Error("LocalDir() is ok for an s3:// destination")
	}
}

func TestTheSystemdExampleParses(t *testing.T) {
	t.Setenv(credentialsDirVar, testCredentialsDir)
	d, err := LoadDaemon(filepath.Join("..", "systemd", "zspool.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := defaultDaemon()
	want.SpoolDir = "/var/spool/zspool"
	want.StateDir = "/var/lib/zspool"
	want.FailedDir = "/var/lib/zspool/failed"
	want.Destination.URL = "s3://acquisitions/raw"
	want.Destination.Endpoint = "https://minio.example.internal:9000"
	want.Destination.PathStyle = true
	want.Destination.CredentialsFile = testCredentialsDir + "/s3"
	want.Release.ArchiveDir = "/var/lib/zspool/archive"
	if !reflect.DeepEqual(*d, want) {
		t.Errorf("got\n%+v\nwant\n%+v", *d, want)
	}
}

func TestEveryDaemonDefault(t *testing.T) {
	d := mustParseDaemon(t, minimalDaemonConfig)
	tests := []struct {
		name      string
		got, want any
	}{
		{"failed_dir defaults to failed under state_dir", d.FailedDir, "/srv/state/failed"},
		{"engine defaults to auto", d.Engine, "auto"},
		{"zstd_encoder defaults to the engine's own (empty)", d.ZstdEncoder, ""},
		{"zstd frames carry no checksum by default", d.ZstdChecksum, false},
		{"concurrent_jobs defaults to 1", d.ConcurrentJobs, 1},
		{"memory_budget defaults to an eighth of the host, at least 768 MiB", d.MemoryBudget, DefaultMemoryBudget()},
		{"settle defaults to 30s", d.Settle, Duration(30 * time.Second)},
		{"rescan_interval defaults to 60s", d.RescanInterval, Duration(60 * time.Second)},
		{"the region defaults to us-east-1", d.Destination.Region, "us-east-1"},
		{"the endpoint defaults to AWS (empty)", d.Destination.Endpoint, ""},
		{"path_style defaults to false", d.Destination.PathStyle, false},
		{"there is no CA bundle by default", d.Destination.CABundle, ""},
		{"there is no profile by default", d.Destination.Profile, ""},
		{"there is no credentials file by default", d.Destination.CredentialsFile, ""},
		{"part_size defaults to 16 MiB", d.Destination.PartSize, 16 * MiB},
		{"max_parts_in_flight defaults to 0, sized by the memory budget", d.Destination.MaxPartsInFlight, 0},
		{"request checksums are sent by default", d.Destination.NoRequestChecksums, false},
		{"conditional_writes defaults to auto", d.Destination.ConditionalWrites, "auto"},
		{"the object checksum defaults to crc32c", d.Destination.Checksum, "crc32c"},
		{"the release policy defaults to archive", d.Release.Policy, "archive"},
		{"archive_dir defaults to archive under state_dir", d.Release.ArchiveDir, "/srv/state/archive"},
		{"max_attempts defaults to 10", d.Retry.MaxAttempts, 10},
		{"max_backoff defaults to 20s", d.Retry.MaxBackoff, Duration(20 * time.Second)},
		{"job_backoff defaults to 5s", d.Retry.JobBackoff, Duration(5 * time.Second)},
		{"job_max_backoff defaults to 5m", d.Retry.JobMaxBackoff, Duration(5 * time.Minute)},
		{"metrics listen on localhost:9464 by default", d.Metrics.Listen, "127.0.0.1:9464"},
		{"metrics are enabled by default", d.Metrics.Enabled(), true},
		{"log_level defaults to info", d.LogLevel, "info"},
		{"shutdown_timeout defaults to 30s", d.ShutdownTimeout, Duration(30 * time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v (%T), want %v (%T)", tc.got, tc.got, tc.want, tc.want)
			}
		})
	}
}

func TestAcceptedVariations(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		check func(t *testing.T, d *Daemon)
	}{
		{"a release policy of delete leaves no archive_dir", daemonWith("release:\n  policy: delete\n", ""), func(t *testing.T, d *Daemon) {
			expectEq(t, "release", d.Release, Release{Policy: "delete"})
		}},
		{"listen off disables metrics", daemonWith("metrics:\n  listen: off\n", ""), func(t *testing.T, d *Daemon) {
			expectEq(t, "listen", d.Metrics.Listen, MetricsOff)
			expectEq(t, "enabled", d.Metrics.Enabled(), false)
		}},
		{"an empty listen disables metrics too", daemonWith("metrics:\n  listen: \"\"\n", ""), func(t *testing.T, d *Daemon) {
			expectEq(t, "listen", d.Metrics.Listen, MetricsOff)
		}},
		{"listen may leave the host out for every interface", daemonWith("metrics:\n  listen: \":9464\"\n", ""), func(t *testing.T, d *Daemon) {
			expectEq(t, "listen", d.Metrics.Listen, ":9464")
		}},
		{"a file URL is a local destination", strings.Replace(minimalDaemonConfig, "s3://bucket/prefix", "file:///data/out/", 1), func(t *testing.T, d *Daemon) {
			dir, ok := d.Destination.LocalDir()
			expectEq(t, "dir", dir, "/data/out")
			expectEq(t, "ok", ok, true)
			_, _, isS3 := d.Destination.S3()
			expectEq(t, "S3 ok", isS3, false)
		}},
		{"an absolute directory is a local destination", strings.Replace(minimalDaemonConfig, "s3://bucket/prefix", "/data/out", 1), func(t *testing.T, d *Daemon) {
			dir, ok := d.Destination.LocalDir()
			expectEq(t, "dir", dir, "/data/out")
			expectEq(t, "ok", ok, true)
		}},
		{"a bucket alone is an S3 destination with no prefix", strings.Replace(minimalDaemonConfig, "s3://bucket/prefix", "s3://bucket", 1), func(t *testing.T, d *Daemon) {
			bucket, prefix, ok := d.Destination.S3()
			expectEq(t, "S3", [3]any{bucket, prefix, ok}, [3]any{"bucket", "", true})
		}},
		{"zstd_encoder klauspost is kept", daemonWith("zstd_encoder: klauspost\n", ""), func(t *testing.T, d *Daemon) {
			expectEq(t, "zstd_encoder", d.ZstdEncoder, "klauspost")
		}},
		{"an empty zstd_encoder is the engine's default", daemonWith("zstd_encoder: \"\"\n", ""), func(t *testing.T, d *Daemon) {
			expectEq(t, "zstd_encoder", d.ZstdEncoder, "")
		}},
		{"zstd_checksum false is kept", daemonWith("zstd_checksum: false\n", ""), func(t *testing.T, d *Daemon) {
			expectEq(t, "zstd_checksum", d.ZstdChecksum, false)
		}},
		{"settle may be zero", daemonWith("settle: 0s\n", ""), func(t *testing.T, d *Daemon) {
			expectEq(t, "settle", d.Settle, Duration(0))
		}},
		{"sizes take every unit in any case, with or without a space", daemonWith("memory_budget: 1.5 gb\n", "part_size: 5242880\n"), func(t *testing.T, d *Daemon) {
			expectEq(t, "memory_budget", d.MemoryBudget, Size(1_500_000_000))
			expectEq(t, "part_size", d.Destination.PartSize, 5*MiB)
		}},
		{"concurrent_jobs may reach 64", daemonWith("concurrent_jobs: 64\n", ""), func(t *testing.T, d *Daemon) {
			expectEq(t, "concurrent_jobs", d.ConcurrentJobs, 64)
		}},
		{"directories are cleaned", strings.Replace(minimalDaemonConfig, "/srv/state", "/srv//state/./", 1), func(t *testing.T, d *Daemon) {
			expectEq(t, "state_dir", d.StateDir, "/srv/state")
			expectEq(t, "failed_dir", d.FailedDir, "/srv/state/failed")
		}},
		{"a spool inside the state dir is allowed", strings.Replace(minimalDaemonConfig, "/srv/spool", "/srv/state/incoming", 1), func(t *testing.T, d *Daemon) {
			expectEq(t, "spool_dir", d.SpoolDir, "/srv/state/incoming")
		}},
		{"anchors and aliases are followed", daemonWith("retry:\n  job_backoff: &b 7s\n  max_backoff: *b\n", ""), func(t *testing.T, d *Daemon) {
			expectEq(t, "max_backoff", d.Retry.MaxBackoff, Duration(7*time.Second))
		}},
		{"a leading document marker is fine", "---\n" + minimalDaemonConfig, func(t *testing.T, d *Daemon) {
			expectEq(t, "spool_dir", d.SpoolDir, "/srv/spool")
		}},
		{"a section with every setting commented out takes the defaults", daemonWith("retry:\n  # max_attempts: 3\nmetrics:\n", ""), func(t *testing.T, d *Daemon) {
			expectEq(t, "retry", d.Retry, defaultDaemon().Retry)
			expectEq(t, "metrics", d.Metrics, defaultDaemon().Metrics)
		}},
		{"an empty credentials_file reads no environment", daemonWith("", "credentials_file: \"\"\n"), func(t *testing.T, d *Daemon) {
			expectEq(t, "credentials_file", d.Destination.CredentialsFile, "")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, mustParseDaemon(t, tc.doc))
		})
	}
}

func expectEq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

type badDaemonCase struct {
	name   string
	doc    string
	field  string // "" for an error about the whole document
	phrase string
	line   int    // the line the message must name, if not 0
	absent string // text that must appear in no message (a secret)
	also   int    // further violations that follow from the same mistake
}

var badDaemonCases = []badDaemonCase{
	// The document.
	{name: "an empty file is refused", doc: "", phrase: "config is empty"},
	{name: "a file of comments only is refused as empty", doc: "# nothing yet\n\n", phrase: "config is empty"},
	{name: "two documents are refused", doc: minimalDaemonConfig + "---\nengine: cpu\n", phrase: "more than one YAML document (the second starts on line 6)"},
	{name: "a document that is a list is refused", doc: "- spool_dir: /s\n", phrase: "must be a YAML mapping of settings, got a list (line 1)"},
	{name: "a tab used for indentation names its line", doc: "spool_dir: /s\n\tstate_dir: /t\n", phrase: "not valid YAML: line 2: found a tab character"},
	{name: "a tab before a nested key names its line and hints at the tab", doc: "spool_dir: /s\ndestination:\n\turl: s3://bkt/p\n", phrase: "line 3: found character that cannot start any token (a tab?"},
	{name: "bad indentation names its line", doc: "spool_dir: /s\n  state_dir: /t\nengine: cpu\n", phrase: "not valid YAML: line 2"},
	{name: "an unclosed quote names its line", doc: "spool_dir: /s\nstate_dir: \"/t\n", phrase: "not valid YAML: line 2"},

	// Keys.
	{name: "an unknown key is refused with the known ones", doc: daemonWith("colour: red\n", ""), field: "colour", phrase: "unknown field; known fields: spool_dir, state_dir, failed_dir, destination", line: 5},
	{name: "a misspelt key is refused with a suggestion", doc: daemonWith("concurent_jobs: 2\n", ""), field: "concurent_jobs", phrase: `did you mean "concurrent_jobs"?`},
	{name: "a key with dashes is refused with the underscore spelling", doc: daemonWith("", "part-size: 8MiB\n"), field: `destination["part-size"]`, phrase: `did you mean "part_size"?`},
	{name: "a key in the wrong section says where it belongs", doc: daemonWith("part_size: 8MiB\n", ""), field: "part_size", phrase: "unknown field here; it belongs under destination"},
	{name: "a duplicate key is refused with both lines", doc: daemonWith("engine: cpu\nengine: gpu\n", ""), field: "engine", phrase: "appears on lines 5 and 6"},
	{name: "a duplicate nested key is refused", doc: daemonWith("", "region: a\nregion: b\n"), field: "destination.region", phrase: "appears on lines 5 and 6"},
	{name: "a merge key is refused", doc: daemonWith("retry:\n  <<: {max_attempts: 3}\n", ""), field: "retry", phrase: "merge keys (<<) are not supported", line: 6},
	{name: "a key without a value is refused", doc: daemonWith("settle:\n", ""), field: "settle", phrase: "has no value; give one, or remove the key", line: 5},
	{name: "a section that is not a mapping is refused", doc: "spool_dir: /s\nstate_dir: /t\ndestination: s3://bkt/p\n", field: "destination", phrase: `want a mapping of url, endpoint, region`},

	// Secrets.
	{name: "a secret key under destination is refused without echoing it", doc: daemonWith("", "secret_key: hunter2-wJalrXUtnFEMI\n"), field: "destination.secret_key", phrase: secretMsg, line: 5, absent: "hunter2"},
	{name: "an access key id is refused as a secret", doc: daemonWith("", "aws_access_key_id: AKIAIOSFODNN7EXAMPLE\n"), field: "destination.aws_access_key_id", phrase: "secrets do not belong in the config file", absent: "AKIAIOSFODNN7EXAMPLE"},
	{name: "a secret inside an unknown block is found and not echoed", doc: daemonWith("", "s3:\n  aws_secret_access_key: hunter2\n"), field: "destination.s3.aws_secret_access_key", phrase: "use the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or credentials_file", absent: "hunter2", also: 1},
	{name: "a secret at the top level is refused too", doc: daemonWith("password: hunter2\n", ""), field: "password", phrase: secretMsg, absent: "hunter2"},
	{name: "credentials in the destination URL are refused without echoing them", doc: strings.Replace(minimalDaemonConfig, "s3://bucket", "s3://AKIAEXAMPLE:hunter2@bucket", 1), field: "destination.url", phrase: "must not carry credentials", absent: "hunter2"},
	{name: "a bucket name S3 refuses names the rule", doc: strings.Replace(minimalDaemonConfig, "s3://bucket/prefix", "s3://zb/prefix", 1), field: "destination.url", phrase: `bucket "zb" is 2 characters long; S3 bucket names have 3 to 63`},
	{name: "an uppercase bucket name names the rule", doc: strings.Replace(minimalDaemonConfig, "s3://bucket/prefix", "s3://Data_Lake/prefix", 1), field: "destination.url", phrase: "use lowercase letters, digits, dots and hyphens"},
	{name: "a presigned query in the destination URL is refused without echoing it", doc: strings.Replace(minimalDaemonConfig, "s3://bucket/prefix", "s3://bucket/prefix?X-Amz-Signature=hunter2", 1), field: "destination.url", phrase: "has a query or fragment", absent: "hunter2"},
	{name: "a query in the endpoint is refused without echoing it", doc: daemonWith("", "endpoint: https://minio:9000/?token=hunter2\n"), field: "destination.endpoint", phrase: "has a path, query or fragment", absent: "hunter2"},
	{name: "a query in a file URL is refused without echoing it", doc: strings.Replace(minimalDaemonConfig, "s3://bucket/prefix", "file:///srv/out?key=hunter2", 1), field: "destination.url", phrase: "has a query or fragment", absent: "hunter2"},
	{name: "credentials in the endpoint are refused without echoing them", doc: daemonWith("", "endpoint: https://admin:hunter2@minio:9000\n"), field: "destination.endpoint", phrase: "must not carry credentials", absent: "hunter2"},

	// Notify, retention and S3 object options.
	{name: "a webhook that is not a URL is refused without echoing it", doc: daemonWith("notify:\n  webhook: lake.example/hook?token=hunter2\n", ""), field: "notify.webhook", phrase: "is not an http(s)://host/path URL", absent: "hunter2"},
	{name: "a webhook with user info is refused", doc: daemonWith("notify:\n  webhook: https://u:hunter2@lake/hook\n", ""), field: "notify.webhook", phrase: "must not carry user:password@", absent: "hunter2"},
	{name: "a relative notify command is refused", doc: daemonWith("notify:\n  exec: [notify-lake]\n", ""), field: "notify.exec", phrase: "must be an absolute path"},
	{name: "notify.exec must be a list", doc: daemonWith("notify:\n  exec: /bin/true --x\n", ""), field: "notify.exec", phrase: "want a list"},
	{name: "a notify queue of 0 is refused", doc: daemonWith("notify:\n  queue: 0\n", ""), field: "notify.queue", phrase: "0 is not within 1…100000"},
	{name: "archive bounds with policy delete are refused", doc: daemonWith("release:\n  policy: delete\n  archive_max_age: 24h\n", ""), field: "release.archive_max_age", phrase: "release.policy is delete"},
	{name: "an SSE mode S3 does not know is refused", doc: daemonWith("", "sse: aes\n"), field: "destination.sse", phrase: `"aes" is not one of AES256 (SSE-S3), aws:kms (SSE-KMS)`},
	{name: "a KMS key without aws:kms is refused", doc: daemonWith("", "sse: AES256\nsse_kms_key_id: k\n"), field: "destination.sse_kms_key_id", phrase: "sse is not aws:kms"},
	{name: "eleven tags are refused", doc: daemonWith("", "tags: {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10, k: 11}\n"), field: "destination.tags", phrase: "has 11 tags; S3 allows at most 10"},
	{name: "object options on a local destination are refused", doc: strings.Replace(daemonWith("", "storage_class: GLACIER_IR\n"), "s3://bucket/prefix", "/srv/out", 1), field: "destination", phrase: "apply to an s3:// destination only"},

	// Directories.
	{name: "spool_dir is required", doc: "state_dir: /t\ndestination:\n  url: s3://bkt/p\n", field: "spool_dir", phrase: "required"},
	{name: "a relative spool_dir is refused", doc: strings.Replace(minimalDaemonConfig, "/srv/spool", "spool", 1), field: "spool_dir", phrase: `must be an absolute path, got "spool"`, line: 1},
	{name: "a relative state_dir is refused", doc: strings.Replace(minimalDaemonConfig, "/srv/state", "./state", 1), field: "state_dir", phrase: "must be an absolute path", line: 2},
	{name: "the root directory is refused as the spool", doc: strings.Replace(minimalDaemonConfig, "/srv/spool", "/", 1), field: "spool_dir", phrase: "must not be the root directory"},
	{name: "a state_dir equal to spool_dir is refused", doc: strings.Replace(minimalDaemonConfig, "/srv/state", "/srv/spool/", 1), field: "state_dir", phrase: "must not be spool_dir itself"},
	{name: "a state_dir inside spool_dir is refused", doc: strings.Replace(minimalDaemonConfig, "/srv/state", "/srv/spool/.state", 1), field: "state_dir", phrase: "must not be inside spool_dir (/srv/spool)"},
	{name: "a failed_dir inside spool_dir is refused", doc: daemonWith("failed_dir: /srv/spool/failed\n", ""), field: "failed_dir", phrase: "must not be inside spool_dir"},
	{name: "a relative archive_dir is refused", doc: daemonWith("release:\n  archive_dir: archive\n", ""), field: "release.archive_dir", phrase: "must be an absolute path"},
	{name: "an archive_dir inside spool_dir is refused", doc: daemonWith("release:\n  archive_dir: /srv/spool/done\n", ""), field: "release.archive_dir", phrase: "archived files would be converted again"},
	{name: "an archive_dir with the delete policy is refused", doc: daemonWith("release:\n  policy: delete\n  archive_dir: /srv/archive\n", ""), field: "release.archive_dir", phrase: "release.policy is delete"},
	{name: "an archive_dir equal to failed_dir is refused", doc: daemonWith("failed_dir: /srv/x\nrelease:\n  archive_dir: /srv/x\n", ""), field: "release.archive_dir", phrase: "must not be failed_dir"},

	// Destination.
	{name: "destination.url is required", doc: "spool_dir: /s\nstate_dir: /t\n", field: "destination.url", phrase: "required: s3://bucket/prefix, file:///abs/dir or an absolute directory"},
	{name: "a relative local destination is refused", doc: strings.Replace(minimalDaemonConfig, "s3://bucket/prefix", "out/zarr", 1), field: "destination.url", phrase: "is a relative directory"},
	{name: "an unknown destination scheme is refused", doc: strings.Replace(minimalDaemonConfig, "s3://bucket/prefix", "gs://bucket/prefix", 1), field: "destination.url", phrase: `scheme "gs" is not supported`},
	{name: "an http destination points at endpoint", doc: strings.Replace(minimalDaemonConfig, "s3://bucket/prefix", "https://minio:9000/bucket", 1), field: "destination.url", phrase: "put it in destination.endpoint"},
	{name: "an S3 prefix with a dot-dot component is refused", doc: strings.Replace(minimalDaemonConfig, "s3://bucket/prefix", "s3://bucket/a/../b", 1), field: "destination.url", phrase: ". or .. component"},
	{name: "a local destination inside the spool is refused", doc: strings.Replace(minimalDaemonConfig, "s3://bucket/prefix", "file:///srv/spool/out", 1), field: "destination.url", phrase: "must not be spool_dir or inside it"},
	{name: "an endpoint without a scheme is refused", doc: daemonWith("", "endpoint: minio:9000\n"), field: "destination.endpoint", phrase: "want http(s)://host[:port]"},
	{name: "an endpoint with a bucket path is refused", doc: daemonWith("", "endpoint: http://minio:9000/bucket\n"), field: "destination.endpoint", phrase: "has a path, query or fragment"},
	{name: "a part_size of 4 MiB is below S3's minimum", doc: daemonWith("", "part_size: 4MiB\n"), field: "destination.part_size", phrase: "4 MiB is below S3's minimum of 5 MiB", line: 5},
	{name: "a part_size over 5 GiB is above S3's maximum", doc: daemonWith("", "part_size: 6 GiB\n"), field: "destination.part_size", phrase: "6 GiB is above S3's maximum of 5 GiB"},
	{name: "max_parts_in_flight below 0 is refused", doc: daemonWith("", "max_parts_in_flight: -1\n"), field: "destination.max_parts_in_flight", phrase: "-1 is not within 1…256"},
	{name: "an unknown conditional_writes mode is refused", doc: daemonWith("", "conditional_writes: maybe\n"), field: "destination.conditional_writes", phrase: `"maybe" is not one of auto, on, off`},
	{name: "an object checksum S3 cannot combine over parts is refused", doc: daemonWith("", "checksum: sha256\n"), field: "destination.checksum", phrase: `"sha256" is not one of crc32c, crc64nvme`},
	{name: "yes is not a boolean", doc: daemonWith("", "path_style: yes\n"), field: "destination.path_style", phrase: `want true or false; got "yes"`},
	{name: "a relative ca_bundle is refused", doc: daemonWith("", "ca_bundle: ca.pem\n"), field: "destination.ca_bundle", phrase: "must be an absolute path"},
	{name: "a region with spaces is refused", doc: daemonWith("", "region: us east\n"), field: "destination.region", phrase: "is not a region name"},
	{name: "a variable other than CREDENTIALS_DIRECTORY is refused", doc: daemonWith("", "credentials_file: $HOME/.aws/credentials\n"), field: "destination.credentials_file", phrase: "only ${CREDENTIALS_DIRECTORY} is expanded here"},
	{name: "a relative credentials_file is refused", doc: daemonWith("", "credentials_file: s3-credentials\n"), field: "destination.credentials_file", phrase: "must be an absolute path"},

	// Scalars.
	{name: "an unknown engine is refused", doc: daemonWith("engine: cuda\n", ""), field: "engine", phrase: `"cuda" is not one of auto, cpu, gpu`, line: 5},
	{name: "an unknown zstd_encoder is refused with the choices", doc: daemonWith("zstd_encoder: zstd\n", ""), field: "zstd_encoder", phrase: `"zstd" is not one of klauspost, window, segmented, lit`, line: 5},
	{name: "a zstd_encoder in capitals is refused", doc: daemonWith("zstd_encoder: Lit\n", ""), field: "zstd_encoder", phrase: `"Lit" is not one of klauspost, window, segmented, lit`},
	{name: "yes is not a zstd_checksum", doc: daemonWith("zstd_checksum: yes\n", ""), field: "zstd_checksum", phrase: `want true or false; got "yes"`, line: 5},
	{name: "a quoted zstd_checksum is a string, not a boolean", doc: daemonWith("zstd_checksum: \"true\"\n", ""), field: "zstd_checksum", phrase: "want true or false"},
	{name: "a zstd_checksum without a value is refused", doc: daemonWith("zstd_checksum:\n", ""), field: "zstd_checksum", phrase: "has no value"},
	{name: "concurrent_jobs of 0 is refused", doc: daemonWith("concurrent_jobs: 0\n", ""), field: "concurrent_jobs", phrase: "0 is not within 1…64", line: 5},
	{name: "concurrent_jobs of 65 is refused", doc: daemonWith("concurrent_jobs: 65\n", ""), field: "concurrent_jobs", phrase: "65 is not within 1…64"},
	{name: "a fractional concurrent_jobs is refused, not truncated", doc: daemonWith("concurrent_jobs: 2.5\n", ""), field: "concurrent_jobs", phrase: "want an integer; got 2.5", line: 5},
	{name: "a word for concurrent_jobs names the key and line", doc: daemonWith("concurrent_jobs: two\n", ""), field: "concurrent_jobs", phrase: `want an integer; got "two"`, line: 5},
	{name: "a memory_budget in parsecs is refused", doc: daemonWith("memory_budget: 12 parsecs\n", ""), field: "memory_budget", phrase: `"12 parsecs" is not a size: unknown unit "parsecs"`, line: 5},
	{name: "a memory_budget below 64 MiB is refused", doc: daemonWith("memory_budget: 32MiB\n", ""), field: "memory_budget", phrase: "32 MiB is below the minimum of 64 MiB"},
	{name: "a negative settle is refused", doc: daemonWith("settle: -1s\n", ""), field: "settle", phrase: "-1s is not within 0s…24h"},
	{name: "an integer duration is refused as ambiguous", doc: daemonWith("settle: 30\n", ""), field: "settle", phrase: "30 is a bare number, whose unit would be a guess", line: 5},
	{name: "a quoted integer duration is refused too", doc: daemonWith("settle: \"30\"\n", ""), field: "settle", phrase: "is a bare number"},
	{name: "a rescan_interval of 0s is refused", doc: daemonWith("rescan_interval: 0s\n", ""), field: "rescan_interval", phrase: "0s is not within 1s…24h"},
	{name: "a duration in words is refused", doc: daemonWith("shutdown_timeout: soon\n", ""), field: "shutdown_timeout", phrase: `"soon" is not a duration`},
	{name: "a release policy of keep is refused", doc: daemonWith("release:\n  policy: keep\n", ""), field: "release.policy", phrase: `"keep" is not one of archive, delete`, line: 6},
	{name: "a metrics listen without a host:port is refused", doc: daemonWith("metrics:\n  listen: \"9464\"\n", ""), field: "metrics.listen", phrase: `"9464" is not host:port`},
	{name: "a metrics port out of range is refused", doc: daemonWith("metrics:\n  listen: localhost:99999\n", ""), field: "metrics.listen", phrase: "is not 1…65535"},
	{name: "a log_level of loud is refused", doc: daemonWith("log_level: loud\n", ""), field: "log_level", phrase: `"loud" is not one of debug, info, warn, error`},
	{name: "max_attempts over 100 is refused", doc: daemonWith("retry:\n  max_attempts: 101\n", ""), field: "retry.max_attempts", phrase: "101 is not within 1…100"},
	{name: "a zero max_backoff is refused", doc: daemonWith("retry:\n  max_backoff: 0s\n", ""), field: "retry.max_backoff", phrase: "0s is not positive"},
	{name: "a job_max_backoff below job_backoff is refused", doc: daemonWith("retry:\n  job_backoff: 1m\n  job_max_backoff: 30s\n", ""), field: "retry.job_max_backoff", phrase: "30s is below retry.job_backoff (1m)"},
}

func TestBadDaemonConfigsNameTheirField(t *testing.T) {
	if len(badDaemonCases) < 20 {
		t.Fatalf("only %d bad cases", len(badDaemonCases))
	}
	for _, tc := range badDaemonCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(credentialsDirVar, testCredentialsDir)
			d, err := ParseDaemon([]byte(tc.doc))
			if err == nil {
				t.Fatalf("accepted:\n%s\n--- as:\n%s", tc.doc, d.Redacted())
			}
			checkDaemonError(t, err, tc)
			t.Logf("%v", err) // go test -v shows every message
		})
	}
}

// checkDaemonError checks that err reports tc's violation, and only the
// expected number of them.
func checkDaemonError(t *testing.T, err error, tc badDaemonCase) {
	t.Helper()
	if tc.absent != "" && strings.Contains(err.Error(), tc.absent) {
		t.Errorf("the error echoes %q:\n%v", tc.absent, err)
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	if tc.field == "" {
		var fe *FieldError
		if errors.As(err, &fe) {
			t.Errorf("a document error came as a field error: %v", err)
		}
		if !strings.Contains(err.Error(), tc.phrase) {
			t.Errorf("error %q does not say %q", err, tc.phrase)
		}
		return
	}
	found := false
	for _, e := range errs {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Errorf("not a *FieldError: %v", e)
			continue
		}
		if fe.Field == tc.field && strings.Contains(fe.Msg, tc.phrase) {
			found = true
			if want := fmt.Sprintf("(line %d)", tc.line); tc.line != 0 && !strings.Contains(fe.Msg, want) {
				t.Errorf("%v does not name %s", fe, want)
			}
		}
	}
	if !found {
		t.Errorf("no error on %s saying %q; got:\n%v", tc.field, tc.phrase, err)
	}
	if len(errs) != 1+tc.also {
		t.Errorf("%d errors, want %d:\n%v", len(errs), 1+tc.also, err)
	}
}

func TestEveryViolationIsReportedAtOnce(t *testing.T) {
	doc := "spool_dir: spool\nstate_dir: /t\nengine: cuda\nconcurrent_jobs: 0\ndestination:\n  url: s3://bkt/p\n  part_size: 1MiB\n  token: hunter2\nlog_level: loud\n"
	_, err := ParseDaemon([]byte(doc))
	if err == nil {
		t.Fatal("accepted")
	}
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		fields = append(fields, e.(*FieldError).Field)
	}
	want := []string{"destination.token", "spool_dir", "destination.part_size", "engine", "concurrent_jobs", "log_level"}
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("fields %v, want %v:\n%v", fields, want, err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error echoes the secret:\n%v", err)
	}
}

func TestCredentialsDirectoryMustBeSetWhenReferenced(t *testing.T) {
	doc := daemonWith("", "credentials_file: ${CREDENTIALS_DIRECTORY}/s3\n")
	tc := badDaemonCase{field: "destination.credentials_file", phrase: "refers to ${CREDENTIALS_DIRECTORY}, which is not set: systemd sets it for a unit with LoadCredential=", line: 5}
	t.Run("an unset CREDENTIALS_DIRECTORY is an error", func(t *testing.T) {
		t.Setenv(credentialsDirVar, "")
		os.Unsetenv(credentialsDirVar)
		_, err := ParseDaemon([]byte(doc))
		if err == nil {
			t.Fatal("accepted")
		}
		checkDaemonError(t, err, tc)
	})
	t.Run("an empty CREDENTIALS_DIRECTORY is an error", func(t *testing.T) {
		t.Setenv(credentialsDirVar, "")
		_, err := ParseDaemon([]byte(doc))
		if err == nil {
			t.Fatal("accepted")
		}
		checkDaemonError(t, err, tc)
	})
	t.Run("a set CREDENTIALS_DIRECTORY is expanded", func(t *testing.T) {
		t.Setenv(credentialsDirVar, "/run/credentials/x.service/")
		d := mustParseDaemon(t, doc)
		expectEq(t, "credentials_file", d.Destination.CredentialsFile, "/run/credentials/x.service/s3")
	})
	t.Run("a relative CREDENTIALS_DIRECTORY is an error", func(t *testing.T) {
		t.Setenv(credentialsDirVar, "creds")
		_, err := ParseDaemon([]byte(doc))
		checkDaemonError(t, err, badDaemonCase{field: "destination.credentials_file", phrase: `must be an absolute path, got "creds/s3" after expanding ${CREDENTIALS_DIRECTORY}`})
	})
}

func TestLoadDaemonNamesThePath(t *testing.T) {
	dir := t.TempDir()
	t.Run("a bad file's errors carry its path and stay field errors", func(t *testing.T) {
		path := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(path, []byte(daemonWith("engine: cuda\n", "")), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadDaemon(path)
		var fe *FieldError
		if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !errors.As(err, &fe) || fe.Field != "engine" {
			t.Errorf("LoadDaemon = %v; want the path, then a field error on engine", err)
		}
	})
	t.Run("a missing file names its path", func(t *testing.T) {
		path := filepath.Join(dir, "missing.yaml")
		_, err := LoadDaemon(path)
		if err == nil || !strings.Contains(err.Error(), path) || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("LoadDaemon = %v; want not-exist naming %s", err, path)
		}
	})
	t.Run("a file over 1 MiB is refused", func(t *testing.T) {
		path := filepath.Join(dir, "huge.yaml")
		big := minimalDaemonConfig + strings.Repeat("# padding\n", MaxDaemonFileSize/10+1)
		if err := os.WriteFile(path, []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadDaemon(path)
		if err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") || !strings.Contains(err.Error(), path) {
			t.Errorf("LoadDaemon = %v; want larger than 1 MiB, naming the path", err)
		}
	})
	t.Run("a good file loads", func(t *testing.T) {
		path := filepath.Join(dir, "good.yaml")
		if err := os.WriteFile(path, []byte(minimalDaemonConfig), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadDaemon(path); err != nil {
			t.Error(err)
		}
	})
}

func TestRedactedReadsBackToTheSameConfig(t *testing.T) {
	t.Setenv(credentialsDirVar, testCredentialsDir)
	if r := mustParseDaemon(t, fullDaemonConfig).Redacted(); strings.Contains(r, "hunter2") || !strings.Contains(r, "webhook: https://lake.example.internal/REDACTED") {
		t.Errorf("Redacted shows the webhook's token, or not where it points:\n%s", r)
	}
	for _, doc := range []string{fullDaemonConfig, minimalDaemonConfig, daemonWith("release:\n  policy: delete\nmetrics:\n  listen: off\n", "")} {
		d := mustParseDaemon(t, doc)
		out := d.Redacted()
		back := mustParseDaemon(t, out)
		if !reflect.DeepEqual(*unmasked(back, d), *d) {
			t.Errorf("Redacted:\n%s\nreads back as\n%+v\nnot\n%+v", out, *back, *d)
		}
		// yaml.Marshal goes through MarshalYAML, which redacts the same way.
		b, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if back := mustParseDaemon(t, string(b)); !reflect.DeepEqual(*unmasked(back, d), *d) {
			t.Errorf("yaml.Marshal:\n%s\nreads back differently", b)
		}
	}
}

func TestRedactedShowsReadableUnits(t *testing.T) {
	out := mustParseDaemon(t, minimalDaemonConfig).Redacted()
	for _, want := range []string{"memory_budget: " + DefaultMemoryBudget().String() + "\n", "settle: 30s\n", "rescan_interval: 1m\n", "part_size: 16 MiB\n", "archive_dir: /srv/state/archive\n", "  region: us-east-1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("Redacted lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "endpoint") {
		t.Errorf("Redacted shows an unset endpoint:\n%s", out)
	}
}

func TestSecretTaggedFieldsAreMasked(t *testing.T) {
	type inner struct {
		Token string `yaml:"token" secret:"true"`
		Note  string `yaml:"note"`
	}
	type withSecrets struct {
		User   string `yaml:"user"`
		Key    string `yaml:"key" secret:"true"`
		Unset  string `yaml:"unset" secret:"true"`
		PIN    int    `yaml:"pin" secret:"true"`
		Nested inner  `yaml:"nested"`
	}
	v := withSecrets{User: "alice", Key: "hunter2", PIN: 1234, Nested: inner{Token: "tok-s3cr3t", Note: "visible"}}
	b, err := yaml.Marshal(redactedNode(reflect.ValueOf(v)))
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, leaked := range []string{"hunter2", "1234", "tok-s3cr3t"} {
		if strings.Contains(out, leaked) {
			t.Errorf("%q leaked:\n%s", leaked, out)
		}
	}
	for _, want := range []string{"user: alice", "key: <redacted>", `unset: ""`, "pin: <redacted>", "token: <redacted>", "note: visible"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}

func TestSecretTaggedFieldsAreNotQuotedInErrors(t *testing.T) {
	var s Size
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(`"hunter2 bytes"`), &n); err != nil {
		t.Fatal(err)
	}
	err := decodeLeaf(n.Content[0], reflect.ValueOf(&s).Elem(), true)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("decodeLeaf of a secret = %v; want an error without the value", err)
	}
	var i int
	err = decodeLeaf(n.Content[0], reflect.ValueOf(&i).Elem(), true)
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "want an integer; got a string") {
		t.Errorf("decodeLeaf of a secret = %v; want a type error without the value", err)
	}
}

func TestSizeRoundTripsThroughYAML(t *testing.T) {
	tests := []struct {
		name string
		size Size
		text string
	}{
		{"zero is 0 B", 0, "0 B"},
		{"an odd byte count stays in bytes", 12345, "12345 B"},
		{"a KiB multiple is in KiB", 3 * KiB, "3 KiB"},
		{"a decimal thousand is in kB", 2000, "2 kB"},
		{"the default budget is in MiB", 768 * MiB, "768 MiB"},
		{"one and a half GiB is in MiB", 1536 * MiB, "1536 MiB"},
		{"a decimal 1.5 GB is in MB", 1_500_000_000, "1500 MB"},
		{"two GiB is in GiB", 2 * GiB, "2 GiB"},
		{"a TiB is in TiB", TiB, "1 TiB"},
		{"a TB is in TB", TB, "1 TB"},
		{"the largest size is in bytes", 1<<63 - 1, "9223372036854775807 B"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := yaml.Marshal(tc.size)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(b)); got != tc.text {
				t.Errorf("marshals as %q, want %q", got, tc.text)
			}
			var back Size
			if err := yaml.Unmarshal(b, &back); err != nil || back != tc.size {
				t.Errorf("reads back as %d, %v; want %d", back, err, tc.size)
			}
		})
	}
}

func TestSizeParsing(t *testing.T) {
	good := []struct {
		yaml string
		want Size
	}{
		{"4096", 4096},
		{`"4096"`, 4096},
		{"512MiB", 512 * MiB},
		{"16 MiB", 16 * MiB},
		{"2GiB", 2 * GiB},
		{"1.5GB", 1_500_000_000},
		{"1.5 KiB", 1536},
		{"64mib", 64 * MiB},
		{"10 B", 10},
		{"1 kB", 1000},
		{"0x100", 256},
	}
	for _, tc := range good {
		t.Run("accepts "+tc.yaml, func(t *testing.T) {
			var s Size
			if err := yaml.Unmarshal([]byte(tc.yaml), &s); err != nil || s != tc.want {
				t.Errorf("= %d, %v; want %d", s, err, tc.want)
			}
		})
	}
	bad := []struct{ yaml, phrase string }{
		{"12 parsecs", `unknown unit "parsecs"`},
		{"-5MiB", "is negative"},
		{"-5", "is negative"},
		{"1.5", "not a whole number of bytes"},
		{"0.3 KiB", "not a whole number of bytes"},
		{"MiB", "is not a size"},
		{"1e9", `unknown unit "e9"`},
		{"16 M", `unknown unit "M"`},
		{"99999999999 GiB", "does not fit"},
		{"true", "want a byte count"},
		{"[1]", "got a list"},
	}
	for _, tc := range bad {
		t.Run("refuses "+tc.yaml, func(t *testing.T) {
			var s Size
			err := yaml.Unmarshal([]byte(tc.yaml), &s)
			if err == nil || !strings.Contains(err.Error(), tc.phrase) {
				t.Errorf("= %d, %v; want an error saying %q", s, err, tc.phrase)
			}
		})
	}
}

func TestDurationRoundTripsThroughYAML(t *testing.T) {
	tests := []struct {
		name string
		d    Duration
		text string
	}{
		{"zero is 0s", 0, "0s"},
		{"seconds stay seconds", Duration(30 * time.Second), "30s"},
		{"whole minutes drop the zero seconds", Duration(5 * time.Minute), "5m"},
		{"whole hours drop the zero minutes and seconds", Duration(24 * time.Hour), "24h"},
		{"mixed units keep what they need", Duration(90 * time.Minute), "1h30m"},
		{"hours and seconds keep the zero minutes", Duration(time.Hour + time.Second), "1h0m1s"},
		{"milliseconds are kept", Duration(250 * time.Millisecond), "250ms"},
		{"a negative duration round-trips", Duration(-time.Second), "-1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := yaml.Marshal(tc.d)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(b)); got != tc.text {
				t.Errorf("marshals as %q, want %q", got, tc.text)
			}
			var back Duration
			if err := yaml.Unmarshal(b, &back); err != nil || back != tc.d {
				t.Errorf("reads back as %v, %v; want %v", back, err, tc.d)
			}
		})
	}
}

func TestDurationParsingRefusesBareNumbers(t *testing.T) {
	for _, in := range []string{"30", "0", "1.5", `"30"`, `"0"`, "-1"} {
		t.Run("refuses "+in, func(t *testing.T) {
			var d Duration
			err := yaml.Unmarshal([]byte(in), &d)
			if err == nil || !strings.Contains(err.Error(), "bare number") {
				t.Errorf("= %v, %v; want a bare-number error", d, err)
			}
		})
	}
	for _, in := range []string{"5 minutes", "1d", "forever", "{a: 1}"} {
		t.Run("refuses "+in, func(t *testing.T) {
			var d Duration
			if err := yaml.Unmarshal([]byte(in), &d); err == nil {
				t.Errorf("accepted as %v", d)
			}
		})
	}
}

// TestTheStrictDecoderAgrees checks the cross-check itself: yaml.v3 with
// KnownFields(true) reads every accepted document as the walk does.
func TestTheStrictDecoderAgrees(t *testing.T) {
	t.Setenv(credentialsDirVar, testCredentialsDir)
	d := defaultDaemon()
	w := newDaemonWalk()
	root, err := readYAMLDocument([]byte(fullDaemonConfig))
	if err != nil {
		t.Fatal(err)
	}
	w.mapping(root, reflect.ValueOf(&d).Elem(), "")
	if len(w.p) != 0 {
		t.Fatal(w.p)
	}
	if err := crossCheckStrict([]byte(fullDaemonConfig), &d); err != nil {
		t.Errorf("strict decoder disagrees: %v", err)
	}
	d.ConcurrentJobs++
	if err := crossCheckStrict([]byte(fullDaemonConfig), &d); err == nil {
		t.Error("a difference went unnoticed")
	}
}

// unmasked is back with the secrets Redacted masked put back from d: the
// rest must read back exactly.
func unmasked(back, d *Daemon) *Daemon {
	c := *back
	if strings.HasSuffix(c.Notify.Webhook, "/"+redactedURLPath) {
		c.Notify.Webhook = d.Notify.Webhook
	}
	return &c
}
