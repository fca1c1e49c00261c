// Package s3test starts real S3-compatible servers (MinIO and versitygw, at
// pinned versions) for tests: each on a free 127.0.0.1 port, with a temporary
// data directory and random credentials, stopped when the test ends.
//
// The binaries are built once by .ci/install-s3-servers.sh into
// ${ZSPOOL_TOOLS:-$HOME/.cache/zspool}/<name>-<version>/. When one is missing
// the test is skipped, or fails when ZSPOOL_REQUIRE_S3=1 (as CI should set).
//
// The package needs only the standard library: requests are signed by the
// small SigV4 signer in sigv4.go.
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Pinned server versions. Keep in sync with .ci/install-s3-servers.sh.
const (
	MinIOVersion     = "v0.0.0-20260212201848-7aac2a2c5b7c"
	VersityGWVersion = "v1.8.0"
)

// Region is the region every server is started with.
const Region = "us-east-1"

const (
	installScript = ".ci/install-s3-servers.sh"
	// startAttempts bounds how often a server is restarted on a fresh port
	// when the port it was given was taken before it could bind.
	startAttempts = 3
	// readyTimeout bounds how long one start waits for the server to answer.
	readyTimeout = 30 * time.Second
	// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
	stopGrace = 5 * time.Second
	// maxLogBytes caps the captured server output (the tail is kept).
	maxLogBytes = 4 << 20
)

// Server is a running S3-compatible server. Its fields describe how to reach
// it; a client should use path-style addressing against Endpoint.
type Server struct {
	Name      string // "minio" or "versitygw"
	Endpoint  string // "http://127.0.0.1:<port>", no trailing slash
	AccessKey string
	SecretKey string
	Region    string // always "us-east-1"
	DataDir   string // the directory the server stores buckets in

	health   string // unauthenticated health-check path
	cmd      *exec.Cmd
	args     []string
	out      *tailBuffer
	done     chan struct{} // closed once the process has been reaped
	waitErr  error         // valid after done is closed
	client   *http.Client
	stopOnce sync.Once
}

// serverSpec describes how to start one kind of server.
type serverSpec struct {
	name, version, binary string
	// command returns the arguments and extra environment for a server in
	// base (an empty directory it owns) listening on addr. It may create
	// directories under base.
	command func(t testing.TB, s *Server, base, addr string) (args, env []string, err error)
	// healthPath answers an unauthenticated GET with 200 once the server
	// listens.
	healthPath string
	// minimum credential lengths the server accepts.
	accessKeyLen, secretKeyLen int
}

var minioSpec = serverSpec{
	name: "minio", version: MinIOVersion, binary: "minio",
	healthPath:   "/minio/health/live",
	accessKeyLen: 20, secretKeyLen: 40, // MinIO needs >= 3 and >= 8
	command: func(t testing.TB, s *Server, base, addr string) ([]string, []string, error) {
		// The console is disabled (MINIO_BROWSER=off), but give it a loopback
		// address anyway so that nothing ever listens on all interfaces.
		consolePort, err := freePort()
		if err != nil {
			return nil, nil, err
		}
		// Besides --address, MinIO always listens on every loopback address
		// (127.0.0.1 and [::1]) at the same port, for its console; a port
		// taken on [::1] only makes it exit with "port is already in use",
		// which start retries.
		args := []string{"server", s.DataDir,
			"--address", addr,
			"--console-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(consolePort)),
			// Keep MinIO's certs dir out of $HOME.
			"--certs-dir", filepath.Join(base, "certs"),
		}
		env := []string{
			"MINIO_ROOT_USER=" + s.AccessKey,
			"MINIO_ROOT_PASSWORD=" + s.SecretKey,
			"MINIO_SITE_REGION=" + Region,
			"MINIO_UPDATE=off",  // no update checks
			"MINIO_BROWSER=off", // no console listener
			// CI/CD mode: caps MinIO's buffer pool at 256 MiB instead of half
			// the machine's memory and skips the root-disk check.
			"MINIO_CI_CD=1",
			"MINIO_CALLHOME_ENABLE=off",
			// A static key so SSE-S3 and SSE-KMS requests can be served
			// (without a KMS MinIO refuses them); a test key, 32 zero
			// bytes, for test data only.
			"MINIO_KMS_SECRET_KEY=zspool-test-key:" + base64.StdEncoding.EncodeToString(make([]byte, 32)),
		}
		return args, env, nil
	},
}

// versityGWSpec is versitygw's spec; forceSidecar stores metadata in a
// sidecar directory even where xattrs work (so tests can cover that path).
func versityGWSpec(forceSidecar bool) serverSpec {
	return serverSpec{
		name: "versitygw", version: VersityGWVersion, binary: "versitygw",
		healthPath:   "/health", // enabled by --health below
		accessKeyLen: 20, secretKeyLen: 40,
		command: func(t testing.TB, s *Server, base, addr string) ([]string, []string, error) {
			args := []string{
				"--access", s.AccessKey,
				"--secret", s.SecretKey,
				"--region", Region,
				"--port", addr,
				"--health", "/health",
				"posix",
			}
			// The posix backend keeps object metadata (ETag, content type,
			// checksums, user metadata) in user.* xattrs; where the filesystem
			// lacks them, keep it in a sidecar directory instead.
			ok, err := userXattrSupported(s.DataDir)
			if err != nil {
				return nil, nil, fmt.Errorf("probing xattr support in %s: %v", s.DataDir, err)
			}
			if !ok || forceSidecar {
				sidecar := filepath.Join(base, "sidecar")
				if err := os.Mkdir(sidecar, 0o755); err != nil {
					return nil, nil, err
				}
				if !ok {
					t.Logf("s3test: %s lacks user xattrs; versitygw keeps metadata in --sidecar %s", s.DataDir, sidecar)
				}
				args = append(args, "--sidecar", sidecar)
			}
			args = append(args, s.DataDir)
			return args, nil, nil
		},
	}
}

// StartMinIO starts the pinned MinIO in single-drive mode and returns it
// once it accepts signed requests. It is stopped when t's test ends.
func StartMinIO(t testing.TB) *Server {
	t.Helper()
	return start(t, minioSpec)
}

// StartVersityGW starts the pinned versitygw with its posix backend and
// returns it once it accepts signed requests. It is stopped when t's test
// ends.
func StartVersityGW(t testing.TB) *Server {
	t.Helper()
	return start(t, versityGWSpec(false))
}

// ToolsDir is where the server binaries are looked up:
// $ZSPOOL_TOOLS, or ~/.cache/zspool.
func ToolsDir() (string, error) {
	if dir := os.Getenv("ZSPOOL_TOOLS"); dir != "" {
		return dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no ZSPOOL_TOOLS and no home directory: %v", err)
	}
	return filepath.Join(home, ".cache", "zspool"), nil
}

func (spec serverSpec) path() (string, error) {
	dir, err := ToolsDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, spec.name+"-"+spec.version, spec.binary), nil
}

// VersityGWBinary is the pinned versitygw's path, for a test whose script
// starts the server itself (bench/convert-ab.sh's S3=1). Where it is not
// installed, t is skipped, or failed under ZSPOOL_REQUIRE_S3=1, as the
// Start functions do.
func VersityGWBinary(t testing.TB) string {
	t.Helper()
	return installed(t, versityGWSpec(false))
}

// installed is spec's binary, which must exist: t is skipped (failed
// under ZSPOOL_REQUIRE_S3=1) where it does not.
func installed(t testing.TB, spec serverSpec) string {
	t.Helper()
	bin, err := spec.path()
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		msg := fmt.Sprintf("s3test: %s %s is not installed (%v); build it with %s from the repository root",
			spec.name, spec.version, err, installScript)
		if os.Getenv("ZSPOOL_REQUIRE_S3") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + " (set ZSPOOL_REQUIRE_S3=1 to fail instead of skipping)")
	}
	return bin
}

func start(t testing.TB, spec serverSpec) *Server {
	t.Helper()
	bin := installed(t, spec)
	for attempt := 1; ; attempt++ {
		s, err := startOnce(t, spec, bin)
		if err == nil {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("s3test: %s output (test failed):\n%s", s.Name, s.Logs())
				}
				s.Stop()
			})
			return s
		}
		var logs string
		if s != nil {
			s.Stop()
			logs = s.Logs()
		}
		if errors.Is(err, errPortTaken) && attempt < startAttempts {
			t.Logf("s3test: %s: %v; retrying on another port", spec.name, err)
			continue
		}
		if s != nil {
			t.Logf("s3test: %s %s output:\n%s", bin, strings.Join(s.args, " "), logs)
		}
		t.Fatalf("s3test: starting %s (attempt %d): %v", spec.name, attempt, err)
	}
}

var errPortTaken = errors.New("listen port was taken")

// startOnce starts one server process and waits until it is ready. On error
// it returns the (possibly nil) server so that the caller can stop it and
// show its output.
func startOnce(t testing.TB, spec serverSpec, bin string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	base := t.TempDir()
	s := &Server{
		Name:      spec.name,
		Endpoint:  "http://" + addr,
		AccessKey: randomKey(spec.accessKeyLen),
		SecretKey: randomKey(spec.secretKeyLen),
		Region:    Region,
		DataDir:   filepath.Join(base, "data"),
		health:    spec.healthPath,
		out:       &tailBuffer{max: maxLogBytes},
		done:      make(chan struct{}),
		client: &http.Client{
			Transport: &http.Transport{
				Proxy:                 nil, // never send loopback requests to a proxy
				DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
				MaxIdleConnsPerHost:   16,
				IdleConnTimeout:       30 * time.Second,
				ResponseHeaderTimeout: 60 * time.Second,
			},
			Timeout: 2 * time.Minute,
		},
	}
	for _, dir := range []string{s.DataDir, filepath.Join(base, "home"), filepath.Join(base, "tmp")} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
	}
	args, extraEnv, err := spec.command(t, s, base, addr)
	if err != nil {
		return nil, err
	}
	s.args = args
	cmd := exec.Command(bin, args...)
	// A small, explicit environment: nothing from the developer's
	// environment (MINIO_*, VGW_*, AWS_*, proxies) changes how the server
	// runs, and HOME/TMPDIR keep its files inside base.
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(base, "home"),
		"TMPDIR=" + filepath.Join(base, "tmp"),
	}, extraEnv...)
	cmd.Dir = base
	cmd.Stdout = s.out
	cmd.Stderr = s.out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s.cmd = cmd
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	return s, s.waitReady()
}

// waitReady polls the server until a signed ListBuckets succeeds. The
// unauthenticated health check comes first only to keep the server's log
// free of failed signed requests while it starts; the signed request proves
// that the answering server is this one (it alone knows the random keys) and
// that its credentials are in effect.
func (s *Server) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	var last string
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		select {
		case <-s.done:
			if looksLikePortTaken(s.Logs()) {
				return fmt.Errorf("%w: %s exited: %v", errPortTaken, s.Endpoint, s.waitErr)
			}
			return fmt.Errorf("%s exited before it was ready: %v", s.Name, s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s after %v (last: %s)", s.Name, s.Endpoint, readyTimeout, last)
		case <-time.After(delay):
		}
		status, err := s.probe(ctx, s.health, false)
		if err != nil || status != http.StatusOK {
			last = fmt.Sprintf("GET %s: status %d, err %v", s.health, status, err)
			continue
		}
		status, err = s.probe(ctx, "/", true)
		if err != nil || status != http.StatusOK {
			last = fmt.Sprintf("signed GET /: status %d, err %v", status, err)
			continue
		}
		return nil
	}
}

func (s *Server) probe(ctx context.Context, path string, signed bool) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+path, nil)
	if err != nil {
		return 0, err
	}
	if signed {
		signV4(req, s.credentials(), emptySHA256, time.Now())
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}

func looksLikePortTaken(logs string) bool {
	logs = strings.ToLower(logs)
	return strings.Contains(logs, "address already in use") ||
		strings.Contains(logs, "port is already in use") ||
		strings.Contains(logs, "already in use by another")
}

// Stop stops the server (SIGTERM, then SIGKILL after a grace period), waits
// for the process to exit and removes its data. It is safe to call more than
// once; a test's cleanup calls it anyway.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.client.CloseIdleConnections()
		if s.cmd != nil {
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				s.cmd.Process.Kill()
			}
			select {
			case <-s.done:
			case <-time.After(stopGrace):
				s.cmd.Process.Kill()
				select {
				case <-s.done:
				case <-time.After(stopGrace):
					// The process ignores SIGKILL (uninterruptible I/O);
					// nothing more can be done from here.
				}
			}
		}
		os.RemoveAll(s.DataDir)
	})
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Exited reports whether the server process has exited (and been reaped).
func (s *Server) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Logs returns the server's captured stdout and stderr (the last 4 MiB).
func (s *Server) Logs() string { return s.out.String() }

func (s *Server) credentials() credentials {
	return credentials{accessKey: s.AccessKey, secretKey: s.SecretKey, region: s.Region, service: "s3"}
}

// Response is a fully read HTTP response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// ErrorCode is the <Code> of an S3 error body, or "" if the body is not one.
func (r *Response) ErrorCode() string {
	var e struct {
		Code string `xml:"Code"`
	}
	if xml.Unmarshal(r.Body, &e) != nil {
		return ""
	}
	return e.Code
}

func (r *Response) String() string {
	return fmt.Sprintf("%d %s %s", r.Status, r.ErrorCode(), bytes.TrimSpace(r.Body))
}

// Do sends a request signed with the server's root credentials and returns
// the whole response. target is an escaped path-style path with an optional
// query, e.g. "/bucket/key" or "/bucket/key?uploadId=x&partNumber=1"; body
// may be nil. Only a transport error is an error; S3 errors are responses.
func (s *Server) Do(ctx context.Context, method, target string, header http.Header, body []byte) (*Response, error) {
	return s.do(ctx, s.credentials(), method, target, header, body)
}

// DoWithSecret is Do signed with the server's access key but the given
// secret key, for testing how the server reports a bad signature.
func (s *Server) DoWithSecret(ctx context.Context, secret, method, target string, header http.Header, body []byte) (*Response, error) {
	c := s.credentials()
	c.secretKey = secret
	return s.do(ctx, c, method, target, header, body)
}

func (s *Server) do(ctx context.Context, c credentials, method, target string, header http.Header, body []byte) (*Response, error) {
	if !strings.HasPrefix(target, "/") {
		return nil, fmt.Errorf("s3test: target %q must start with /", target)
	}
	u, err := url.Parse(s.Endpoint + target)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body == nil {
		req.Body, req.GetBody, req.ContentLength = http.NoBody, nil, 0
	}
	for name, values := range header {
		req.Header[http.CanonicalHeaderKey(name)] = append([]string(nil), values...)
	}
	signV4(req, c, hexSHA256(body), time.Now())
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// Request is Do for tests: a transport error fails the test. Call it only
// from the test's own goroutine.
func (s *Server) Request(t testing.TB, method, target string, header http.Header, body []byte) *Response {
	t.Helper()
	r, err := s.Do(context.Background(), method, target, header, body)
	if err != nil {
		t.Fatalf("s3test: %s %s %s: %v", s.Name, method, target, err)
	}
	return r
}

// CreateBucket creates a bucket (PUT /name), failing the test unless the
// server answers 200.
func (s *Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	if r := s.Request(t, http.MethodPut, "/"+url.PathEscape(name), nil, nil); r.Status != http.StatusOK {
		t.Fatalf("s3test: %s: create bucket %q: %s", s.Name, name, r)
	}
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago. The
// port can be taken again before the server binds it; start retries then.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// randomKey returns n random alphanumeric characters (the slight modulo
// bias does not matter for throwaway test credentials).
func randomKey(n int) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// tailBuffer is a concurrency-safe writer that keeps the last max bytes.
type tailBuffer struct {
	mu      sync.Mutex
	buf     []byte
	max     int
	dropped int64
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.dropped += int64(over)
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped > 0 {
		return fmt.Sprintf("[... %d earlier bytes dropped ...]\n%s", b.dropped, b.buf)
	}
	return string(b.buf)
}
