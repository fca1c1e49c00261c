package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// validate checks every rule of the daemon config, fills the defaults that
// derive from other fields and normalizes what it accepts: directories are
// cleaned, credentials_file expanded, a disabled metrics endpoint is "off".
// Fields the walk could not read are skipped.
func (w *daemonWalk) validate(d *Daemon, lookupEnv func(string) (string, bool)) {
	spoolOK := w.absDir(&d.SpoolDir, "spool_dir", true, "the absolute directory instruments drop raw files into")
	if spoolOK && d.SpoolDir == "/" {
		w.add("spool_dir", "must not be the root directory")
		spoolOK = false
	}
	stateOK := w.absDir(&d.StateDir, "state_dir", true, "the absolute directory of the journal and of claimed files, outside spool_dir")
	if spoolOK && stateOK {
		stateOK = w.notInSpool(d.StateDir, d.SpoolDir, "state_dir", "the daemon would take its own files for input")
	}

	failedOK := false
	if d.FailedDir == "" && w.ok("failed_dir") {
		if stateOK {
			d.FailedDir = filepath.Join(d.StateDir, DefaultFailedSubdir)
			failedOK = true
		}
	} else if w.absDir(&d.FailedDir, "failed_dir", false, "") {
		failedOK = true
		if spoolOK {
			failedOK = w.notInSpool(d.FailedDir, d.SpoolDir, "failed_dir", "quarantined files would be taken for input again")
		}
		if stateOK && d.FailedDir == d.StateDir {
			w.add("failed_dir", "must not be state_dir itself; the default is %s", filepath.Join(d.StateDir, DefaultFailedSubdir))
			failedOK = false
		}
	}

	w.validateDestination(&d.Destination, d.SpoolDir, spoolOK, lookupEnv)
	w.validateRelease(&d.Release, d, spoolOK, stateOK, failedOK)
	w.validateRetention(&d.Release)

	w.oneOf("engine", d.Engine, engines)
	if d.ZstdEncoder != "" {
		// pipeline.EncoderKlauspost, pipeline.EncoderWindow,
		// pipeline.EncoderSegmented and its old name pipeline.EncoderLit;
		// this package cannot import pipeline, which imports it. Left
		// out, the engine picks (the windowed encoder on the CPU, its own
		// encoder on the GPU).
		w.oneOf("zstd_encoder", d.ZstdEncoder, []string{"klauspost", "window", "segmented", "lit"})
	}
	w.intRange("concurrent_jobs", d.ConcurrentJobs, 1, MaxConcurrentJobs)
	if w.ok("memory_budget") && d.MemoryBudget < MinMemoryBudget {
		w.add("memory_budget", "%s is below the minimum of %s", d.MemoryBudget, Size(MinMemoryBudget))
	}
	w.durationRange("settle", d.Settle, 0, MaxSettle)
	w.durationRange("rescan_interval", d.RescanInterval, MinRescanInterval, MaxRescanInterval)
	w.validateRetry(&d.Retry)
	w.validateMetrics(&d.Metrics)
	w.validateNotify(&d.Notify)
	w.oneOf("log_level", d.LogLevel, logLevels)
	w.durationRange("shutdown_timeout", d.ShutdownTimeout, 0, MaxShutdownTimeout)
}

// absDir checks that the directory *dir at field is absolute, and cleans
// it. An empty value is a problem only when required; what says what the
// field is for. It reports whether *dir is a usable directory.
func (w *daemonWalk) absDir(dir *string, field string, required bool, what string) bool {
	if !w.ok(field) {
		return false
	}
	if *dir == "" {
		if required {
			w.add(field, "required: %s", what)
		}
		return false
	}
	if msg := pathProblem(*dir); msg != "" {
		w.add(field, "%s", msg)
		return false
	}
	*dir = filepath.Clean(*dir)
	return true
}

// pathProblem says what is wrong with an absolute path given in the file,
// or "".
func pathProblem(p string) string {
	if r, bad := hasControl(p); bad {
		return "must not contain control characters, found " + r
	}
	if !filepath.IsAbs(p) {
		return "must be an absolute path, got " + quote(p)
	}
	return ""
}

// notInSpool checks that dir, at field, is neither spool nor inside it.
func (w *daemonWalk) notInSpool(dir, spool, field, why string) bool {
	switch {
	case dir == spool:
		w.add(field, "must not be spool_dir itself: %s", why)
	case isWithin(dir, spool):
		w.add(field, "must not be inside spool_dir (%s): %s", spool, why)
	default:
		return true
	}
	return false
}

// isWithin reports whether the clean absolute path p lies strictly inside
// the clean absolute directory dir.
func isWithin(p, dir string) bool {
	return p != dir && strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

func (w *daemonWalk) validateDestination(dst *Destination, spool string, spoolOK bool, lookupEnv func(string) (string, bool)) {
	if w.ok("destination.url") {
		if dst.URL == "" {
			w.add("destination.url", "required: s3://bucket/prefix, file:///abs/dir or an absolute directory")
		} else if dest, msg := parseDestination(dst.URL); msg != "" {
			w.add("destination.url", "%s", msg)
		} else if dest.dir != "" && spoolOK && (dest.dir == spool || isWithin(dest.dir, spool)) {
			w.add("destination.url", "must not be spool_dir or inside it (%s): datasets would be taken for input", spool)
		}
	}
	if w.ok("destination.ca_bundle") && dst.CABundle != "" {
		if msg := pathProblem(dst.CABundle); msg != "" {
			w.add("destination.ca_bundle", "%s", msg)
		} else {
			dst.CABundle = filepath.Clean(dst.CABundle)
		}
	}
	if w.ok("destination.credentials_file") && dst.CredentialsFile != "" {
		if p, msg := expandCredentialsPath(dst.CredentialsFile, lookupEnv); msg != "" {
			w.add("destination.credentials_file", "%s", msg)
		} else {
			dst.CredentialsFile = p
		}
	}
	for _, p := range dst.OptionProblems() {
		field := "destination"
		if p.Field != "" {
			field += "." + p.Field
		}
		if w.ok(field) {
			w.add(field, "%s", p.Msg)
		}
	}
}

// expandCredentialsPath expands ${CREDENTIALS_DIRECTORY}, the only
// variable the config file may use, and checks the result is absolute.
func expandCredentialsPath(s string, lookupEnv func(string) (string, bool)) (string, string) {
	const ref = "${" + credentialsDirVar + "}"
	var b strings.Builder
	for rest := s; rest != ""; {
		i := strings.IndexByte(rest, '$')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		rest = rest[i:]
		if !strings.HasPrefix(rest, ref) {
			return "", "only " + ref + " is expanded here; found " + quote(cut(rest)) + " (a path with a literal $ is not supported)"
		}
		dir, set := lookupEnv(credentialsDirVar)
		if !set || dir == "" {
			return "", "refers to " + ref + ", which is not set: systemd sets it for a unit with LoadCredential= (see systemd/zspool.yaml); outside systemd, set it or give the file's path"
		}
		b.WriteString(dir)
		rest = rest[len(ref):]
	}
	p := b.String()
	if msg := pathProblem(p); msg != "" {
		if p != s {
			return "", msg + " after expanding " + ref
		}
		return "", msg
	}
	return filepath.Clean(p), ""
}

func (w *daemonWalk) validateRelease(r *Release, d *Daemon, spoolOK, stateOK, failedOK bool) {
	if !w.ok("release.policy") || !slices.Contains(releasePolicies, r.Policy) {
		w.oneOf("release.policy", r.Policy, releasePolicies)
		return
	}
	if !w.ok("release.archive_dir") {
		return
	}
	if r.Policy == "delete" {
		if r.ArchiveDir != "" {
			w.add("release.archive_dir", "is set, but release.policy is delete: raw files are deleted, not archived; remove one or the other")
		}
		return
	}
	if r.ArchiveDir == "" {
		if stateOK {
			r.ArchiveDir = filepath.Join(d.StateDir, DefaultArchiveSubdir)
		} else {
			return // state_dir's own problem says it all
		}
	} else if !w.absDir(&r.ArchiveDir, "release.archive_dir", true, "") {
		return
	}
	switch {
	case spoolOK && !w.notInSpool(r.ArchiveDir, d.SpoolDir, "release.archive_dir", "archived files would be converted again"):
	case stateOK && r.ArchiveDir == d.StateDir:
		w.add("release.archive_dir", "must not be state_dir itself; the default is %s", filepath.Join(d.StateDir, DefaultArchiveSubdir))
	case failedOK && r.ArchiveDir == d.FailedDir:
		w.add("release.archive_dir", "must not be failed_dir (%s): archived and quarantined files would mix", d.FailedDir)
	}
}

// validateRetention checks the archive bounds (0: none).
func (w *daemonWalk) validateRetention(r *Release) {
	if w.ok("release.archive_max_age") && r.ArchiveMaxAge < 0 {
		w.add("release.archive_max_age", "%s is negative; 0 keeps archived files forever", r.ArchiveMaxAge)
	}
	if w.ok("release.archive_max_bytes") && r.ArchiveMaxBytes < 0 {
		w.add("release.archive_max_bytes", "is negative; 0 sets no bound")
	}
	if r.Policy == "delete" {
		if r.ArchiveMaxAge != 0 {
			w.add("release.archive_max_age", "is set, but release.policy is delete: nothing is archived; remove one or the other")
		}
		if r.ArchiveMaxBytes != 0 {
			w.add("release.archive_max_bytes", "is set, but release.policy is delete: nothing is archived; remove one or the other")
		}
	}
}

func (w *daemonWalk) validateNotify(n *Notify) {
	if w.ok("notify.webhook") && n.Webhook != "" {
		// Never quoted: a webhook URL often carries its token.
		u, err := url.Parse(n.Webhook)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			w.add("notify.webhook", "is not an http(s)://host/path URL (not shown: it may carry a token)")
		case u.User != nil:
			w.add("notify.webhook", "must not carry user:password@; put a token in the path or query if the receiver wants one")
		}
	}
	if w.ok("notify.exec") && len(n.Exec) > 0 && !filepath.IsAbs(n.Exec[0]) {
		w.add("notify.exec", "the command %s must be an absolute path (the service's PATH is not yours)", quote(n.Exec[0]))
	}
	w.intRange("notify.queue", n.Queue, 1, MaxNotifyQueue)
	w.positiveDuration("notify.timeout", n.Timeout, MaxNotifyTimeout)
}

// validateObjectOptions checks the S3 object options: storage class, SSE
// and tags, which only an S3 destination has.

func (w *daemonWalk) validateRetry(r *Retry) {
	w.intRange("retry.max_attempts", r.MaxAttempts, 1, MaxMaxAttempts)
	w.positiveDuration("retry.max_backoff", r.MaxBackoff, MaxMaxBackoff)
	jobOK := w.positiveDuration("retry.job_backoff", r.JobBackoff, MaxJobBackoff)
	const f = "retry.job_max_backoff"
	if w.ok(f) {
		if jobOK && r.JobMaxBackoff < r.JobBackoff {
			w.add(f, "%s is below retry.job_backoff (%s)", r.JobMaxBackoff, r.JobBackoff)
		} else {
			w.positiveDuration(f, r.JobMaxBackoff, MaxJobMaxBackoff)
		}
	}
}

func (w *daemonWalk) validateMetrics(m *Metrics) {
	const field = "metrics.listen"
	if !w.ok(field) {
		return
	}
	if m.Listen == "" || m.Listen == MetricsOff {
		m.Listen = MetricsOff
		return
	}
	const want = "want host:port (like 127.0.0.1:9464, [::1]:9464 or :9464 for every interface), or off"
	host, port, err := net.SplitHostPort(m.Listen)
	if err != nil {
		w.add(field, "%s is not host:port; %s", quote(m.Listen), want)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		w.add(field, "%s: port %s is not 1…65535; %s", quote(m.Listen), quote(port), want)
		return
	}
	if host != "" && net.ParseIP(host) == nil && !isHostname(host) {
		w.add(field, "%s: %s is neither an IP address nor a host name; %s", quote(m.Listen), quote(host), want)
	}
}

// isHostname reports whether s is a DNS host name: dot-separated labels of
// letters, digits and inner hyphens.
func isHostname(s string) bool {
	if len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' || !isToken(label, "-") {
			return false
		}
	}
	return true
}

// isToken reports whether s is non-empty and made of ASCII letters, digits
// and the bytes of extra.
func isToken(s, extra string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}

func (w *daemonWalk) oneOf(field, v string, allowed []string) {
	if w.ok(field) && !slices.Contains(allowed, v) {
		w.add(field, "%s is not one of %s", quote(v), strings.Join(allowed, ", "))
	}
}

func (w *daemonWalk) intRange(field string, v, lo, hi int) {
	if w.ok(field) && (v < lo || v > hi) {
		w.add(field, "%d is not within %d…%d", v, lo, hi)
	}
}

func (w *daemonWalk) durationRange(field string, v, lo, hi Duration) bool {
	if !w.ok(field) {
		return false
	}
	if v < lo || v > hi {
		w.add(field, "%s is not within %s…%s", v, lo, hi)
		return false
	}
	return true
}

// positiveDuration checks 0 < v ≤ hi.
func (w *daemonWalk) positiveDuration(field string, v, hi Duration) bool {
	if !w.ok(field) {
		return false
	}
	if v <= 0 {
		w.add(field, "%s is not positive; want more than 0s, at most %s", v, hi)
		return false
	}
	return w.durationRange(field, v, 1, hi)
}

// RedactURL is a URL fit for a message or a log line: user info, query
// and fragment (where credentials and presigned signatures live) are
// replaced by "REDACTED". Anything else is kept, so the reader still sees
// which server or bucket is meant.
func RedactURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		scheme, rest = "", s
	}
	tail := ""
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		tail = rest[i:i+1] + "REDACTED"
		rest = rest[:i]
	}
	host, path, hasPath := strings.Cut(rest, "/")
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = "REDACTED@" + host[i+1:]
	}
	out := host
	if hasPath {
		out += "/" + path
	}
	if ok {
		out = scheme + "://" + out
	}
	return out + tail
}

// quoteURL quotes a URL for a message, redacted.
func quoteURL(s string) string { return quote(RedactURL(s)) }

// BucketNameProblem says why S3 would refuse a bucket name, or "". The
// rules are S3's general-purpose bucket naming rules; servers answer a
// breach with a bare "400 Bad Request" that names none of them.
func BucketNameProblem(b string) string {
	switch {
	case len(b) < 3 || len(b) > 63:
		return fmt.Sprintf("is %d characters long; S3 bucket names have 3 to 63", len(b))
	case strings.Trim(b, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "":
		return "has characters S3 does not allow in bucket names: use lowercase letters, digits, dots and hyphens"
	case !isAlnum(b[0]) || !isAlnum(b[len(b)-1]):
		return "must begin and end with a lowercase letter or a digit"
	case strings.Contains(b, ".."):
		return "must not contain two adjacent dots"
	}
	return ""
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
