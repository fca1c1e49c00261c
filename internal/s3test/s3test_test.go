package s3test

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var starters = []struct {
	name  string
	start func(testing.TB) *Server
}{
	{"minio", StartMinIO},
	{"versitygw", StartVersityGW},
}

// TestServer starts each server, round-trips an object through it with the
// SigV4 signer, checks that listings show only what the test wrote, and
// checks that Stop really ends the process and frees the port.
func TestServer(t *testing.T) {
	for _, st := range starters {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			s := st.start(t)
			if s.Name != st.name || s.Region != "us-east-1" || !strings.HasPrefix(s.Endpoint, "http://127.0.0.1:") {
				t.Fatalf("server = %+v", s)
			}

			roundTrip(t, s)

			pid, endpoint := s.Pid(), s.Endpoint
			s.Stop()
			assertStopped(t, s, pid, endpoint)
			s.Stop() // idempotent
		})
	}
}

// TestVersityGWSidecar covers the metadata store used where the temp
// directory lacks user xattrs (tmpfs before Linux 6.6, some overlays).
func TestVersityGWSidecar(t *testing.T) {
	s := start(t, versityGWSpec(true))
	roundTrip(t, s)
	r := s.Request(t, "HEAD", "/zspool-test/dir/hello%20world.txt", http.Header{"x-amz-checksum-mode": {"ENABLED"}}, nil)
	if r.Header.Get("x-amz-checksum-crc64nvme") == "" {
		t.Errorf("no checksum kept with --sidecar: %v", r.Header)
	}
	i := slices.Index(s.args, "--sidecar")
	if i < 0 {
		t.Fatalf("started without --sidecar: %q", s.args)
	}
	var files int
	filepath.WalkDir(s.args[i+1], func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files == 0 {
		t.Errorf("sidecar directory %s is empty: metadata went elsewhere", s.args[i+1])
	}
}

// roundTrip creates a bucket, writes an object with metadata, reads it back
// and checks that listings show nothing else.
func roundTrip(t *testing.T, s *Server) {
	t.Helper()
	if got := listBuckets(t, s); len(got) != 0 {
		t.Fatalf("fresh server lists buckets %q", got)
	}
	s.CreateBucket(t, "zspool-test")

	body := []byte("hello, zspool\n")
	put := s.Request(t, "PUT", "/zspool-test/dir/hello world.txt",
		http.Header{"Content-Type": {"text/plain"}, "X-Amz-Meta-Origin": {"s3test"}}, body)
	if put.Status != 200 {
		t.Fatalf("PutObject: %s", put)
	}
	md5sum := md5.Sum(body)
	wantETag := `"` + hex.EncodeToString(md5sum[:]) + `"`
	if got := put.Header.Get("ETag"); got != wantETag {
		t.Errorf("PutObject ETag = %s, want %s", got, wantETag)
	}

	get := s.Request(t, "GET", "/zspool-test/dir/hello%20world.txt", nil, nil)
	if get.Status != 200 || !bytes.Equal(get.Body, body) {
		t.Fatalf("GetObject: %s", get)
	}
	if got := get.Header.Get("Content-Type"); got != "text/plain" {
		t.Errorf("GetObject Content-Type = %q", got)
	}
	if got := get.Header.Get("X-Amz-Meta-Origin"); got != "s3test" {
		t.Errorf("GetObject x-amz-meta-origin = %q (object metadata lost?)", got)
	}
	if got := get.Header.Get("ETag"); got != wantETag {
		t.Errorf("GetObject ETag = %s, want %s", got, wantETag)
	}

	if got := listObjects(t, s, "zspool-test"); !slices.Equal(got, []string{"dir/hello world.txt"}) {
		t.Errorf("ListObjectsV2 = %q, want just the object written", got)
	}
	if got := listBuckets(t, s); !slices.Equal(got, []string{"zspool-test"}) {
		t.Errorf("ListBuckets = %q, want [zspool-test]", got)
	}
}

// TestConcurrentServers runs two servers of each kind at once: each gets its
// own port, credentials and data.
func TestConcurrentServers(t *testing.T) {
	for _, st := range starters {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			a, b := st.start(t), st.start(t)
			if a.Endpoint == b.Endpoint || a.AccessKey == b.AccessKey || a.DataDir == b.DataDir {
				t.Fatalf("servers share state: %s %s / %s %s", a.Endpoint, a.DataDir, b.Endpoint, b.DataDir)
			}
			a.CreateBucket(t, "only-in-a")
			b.CreateBucket(t, "only-in-b")
			if got := listBuckets(t, a); !slices.Equal(got, []string{"only-in-a"}) {
				t.Errorf("a lists %q", got)
			}
			if got := listBuckets(t, b); !slices.Equal(got, []string{"only-in-b"}) {
				t.Errorf("b lists %q", got)
			}
			// Each server rejects the other's credentials.
			if r := listBucketsWithSecret(t, a, b.SecretKey); r.Status != 403 {
				t.Errorf("a accepted b's secret: %s", r)
			}
			pid := a.Pid()
			a.Stop()
			assertStopped(t, a, pid, a.Endpoint)
			if got := listBuckets(t, b); !slices.Equal(got, []string{"only-in-b"}) {
				t.Errorf("after stopping a, b lists %q", got)
			}
		})
	}
}

// listBucketsWithSecret sends ListBuckets signed with the given secret.
func listBucketsWithSecret(t *testing.T, s *Server, secret string) *Response {
	t.Helper()
	r, err := s.DoWithSecret(t.Context(), secret, "GET", "/", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestMissingBinary checks that a missing server binary skips the test, or
// fails it under ZSPOOL_REQUIRE_S3=1, naming the install script either way.
func TestMissingBinary(t *testing.T) {
	t.Setenv("ZSPOOL_TOOLS", t.TempDir())
	for _, require := range []string{"", "1"} {
		t.Setenv("ZSPOOL_REQUIRE_S3", require)
		for _, st := range starters {
			tb := &recordingTB{TB: t}
			done := make(chan struct{})
			go func() { // Skip and Fatal end the goroutine they are called in.
				defer close(done)
				st.start(tb)
			}()
			<-done
			want := &tb.skipped
			if require == "1" {
				want = &tb.fatal
			}
			if !strings.Contains(*want, installScript) || !strings.Contains(*want, st.name) {
				t.Errorf("ZSPOOL_REQUIRE_S3=%q, %s: skipped %q, fatal %q; want the %s naming %s",
					require, st.name, tb.skipped, tb.fatal, map[bool]string{true: "failure", false: "skip"}[require == "1"], installScript)
			}
		}
	}
}

type recordingTB struct {
	testing.TB
	mu             sync.Mutex
	skipped, fatal string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Skip(args ...any) {
	r.mu.Lock()
	r.skipped = fmt.Sprint(args...)
	r.mu.Unlock()
	runtime.Goexit()
}
func (r *recordingTB) Fatal(args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprint(args...)
	r.mu.Unlock()
	runtime.Goexit()
}
func (r *recordingTB) Fatalf(format string, args ...any) { r.Fatal(fmt.Sprintf(format, args...)) }

func assertStopped(t *testing.T, s *Server, pid int, endpoint string) {
	t.Helper()
	if !s.Exited() {
		t.Errorf("%s (pid %d) still running after Stop", s.Name, pid)
	}
	// The process was reaped, so the pid no longer names a process (barring
	// pid reuse within milliseconds).
	if p, err := os.FindProcess(pid); err == nil {
		if err := p.Signal(syscall.Signal(0)); err == nil {
			t.Errorf("pid %d still exists after Stop", pid)
		} else if !errors.Is(err, os.ErrProcessDone) && !strings.Contains(err.Error(), "no such process") {
			t.Logf("signal 0 to pid %d: %v", pid, err)
		}
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(endpoint, "http://"), time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Stop", endpoint)
	}
	if _, err := os.Stat(s.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data dir %s not removed after Stop: %v", s.DataDir, err)
	}
}

func listBuckets(t *testing.T, s *Server) []string {
	t.Helper()
	r := s.Request(t, "GET", "/", nil, nil)
	if r.Status != 200 {
		t.Fatalf("ListBuckets: %s", r)
	}
	var out struct {
		Names []string `xml:"Buckets>Bucket>Name"`
	}
	if err := xml.Unmarshal(r.Body, &out); err != nil {
		t.Fatalf("ListBuckets: %v in %s", err, r.Body)
	}
	return out.Names
}

func listObjects(t *testing.T, s *Server, bucket string) []string {
	t.Helper()
	r := s.Request(t, "GET", "/"+bucket+"?list-type=2", nil, nil)
	if r.Status != 200 {
		t.Fatalf("ListObjectsV2: %s", r)
	}
	var out struct {
		Keys []string `xml:"Contents>Key"`
	}
	if err := xml.Unmarshal(r.Body, &out); err != nil {
		t.Fatalf("ListObjectsV2: %v in %s", err, r.Body)
	}
	return out.Keys
}
