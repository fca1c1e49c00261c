package faultproxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// seen is what the backend received for one request.
type seen struct {
	Method, RequestURI, Host string
	Header                   http.Header
	TransferEncoding         []string
	ContentLength, BodyLen   int64
	BodySum                  [32]byte
}

type backend struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

const bigLen = 1 << 20

// newBackend records every request and answers like a small S3: PUT with
// an ETag and no body, HEAD with a length and no body, GET …/big with
// 1 MiB, anything else with a short body.
func newBackend(t *testing.T) *backend {
	b := &backend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		s := seen{Method: r.Method, RequestURI: r.RequestURI, Host: r.Host, Header: r.Header.Clone(),
			TransferEncoding: r.TransferEncoding, ContentLength: r.ContentLength, BodyLen: n}
		h.Sum(s.BodySum[:0])
		b.mu.Lock()
		b.reqs = append(b.reqs, s)
		b.mu.Unlock()
		w.Header().Set("ETag", `"e1"`)
		w.Header().Set("X-Amz-Request-Id", "backend")
		switch {
		case r.Method == http.MethodPut:
		case r.Method == http.MethodHead:
			w.Header().Set("Content-Length", "1234")
		case strings.HasSuffix(r.URL.Path, "/big"):
			w.Header().Set("Content-Length", "1048576")
			w.Write(bytes.Repeat([]byte("x"), bigLen))
		default:
			io.WriteString(w, "hello from backend")
		}
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *backend) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.reqs)
}

func (b *backend) last(t *testing.T) seen {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.reqs) == 0 {
		t.Fatal("backend saw no request")
	}
	return b.reqs[len(b.reqs)-1]
}

func newProxy(t *testing.T, b *backend, seed uint64, rules ...Rule) *Proxy {
	p, err := New(b.URL, seed, rules...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// fresh is a client that never reuses connections, so Go's transport
// never retries a request on a connection the proxy cut.
var fresh = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// do sends one request and reads the whole response.
func do(c *http.Client, method, url string, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return resp, got, err
}

func TestPassthroughUnmodified(t *testing.T) {
	b := newBackend(t)
	p := newProxy(t, b, 1, Rule{Op: "*", Fraction: 0, Faults: []Fault{Status500}})
	target := "/bkt/dir/a%2Fb%7E+c%20d?partNumber=3&uploadId=x%2By%3D&x-id=UploadPart"
	body := []byte("part bytes \x00\x01\xff")
	req, _ := http.NewRequest("PUT", p.URL()+target, bytes.NewReader(body))
	sent := http.Header{
		"Authorization":        {"AWS4-HMAC-SHA256 Credential=AK/20250101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=abc"},
		"X-Amz-Date":           {"20250101T000000Z"},
		"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"},
		"Content-Type":         {"application/octet-stream"},
		"Content-Md5":          {"1B2M2Y8AsgTpgAmY7PhCfg=="},
		"X-Amz-Meta-Multi":     {"one", "two"},
		"User-Agent":           {"zspool-test/1"},
	}
	for k, v := range sent {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("ETag") != `"e1"` ||
		resp.Header.Get("X-Amz-Request-Id") != "backend" || len(got) != 0 {
		t.Errorf("response %d %v %q", resp.StatusCode, resp.Header, got)
	}
	s := b.last(t)
	proxyHost := strings.TrimPrefix(p.URL(), "http://")
	if s.Method != "PUT" || s.RequestURI != target || s.Host != proxyHost {
		t.Errorf("backend saw %s %s Host %s, want PUT %s Host %s", s.Method, s.RequestURI, s.Host, target, proxyHost)
	}
	for k, v := range sent {
		if g := s.Header[k]; strings.Join(g, "|") != strings.Join(v, "|") {
			t.Errorf("header %s = %q, want %q", k, g, v)
		}
	}
	for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Host", "Via"} {
		if v, ok := s.Header[k]; ok {
			t.Errorf("proxy added %s: %q", k, v)
		}
	}
	if s.ContentLength != int64(len(body)) || s.BodyLen != int64(len(body)) || s.BodySum != sha256.Sum256(body) {
		t.Errorf("body: Content-Length %d, got %d bytes, sum match %v", s.ContentLength, s.BodyLen, s.BodySum == sha256.Sum256(body))
	}
}

func TestPassthroughHeadGetPost(t *testing.T) {
	b := newBackend(t)
	p := newProxy(t, b, 1)
	resp, _, err := do(http.DefaultClient, "HEAD", p.URL()+"/b/k", nil)
	if err != nil || resp.StatusCode != 200 || resp.ContentLength != 1234 {
		t.Fatalf("HEAD: %v %v", resp, err)
	}
	resp, got, err := do(http.DefaultClient, "GET", p.URL()+"/b/big", nil)
	if err != nil || resp.StatusCode != 200 || len(got) != bigLen {
		t.Fatalf("GET big: %v, %d bytes, %v", resp, len(got), err)
	}
	resp, got, err = do(http.DefaultClient, "POST", p.URL()+"/b/k?uploads", nil)
	if err != nil || string(got) != "hello from backend" {
		t.Fatalf("POST: %v %q %v", resp, got, err)
	}
	if s := b.last(t); s.RequestURI != "/b/k?uploads" {
		t.Errorf("backend saw %s", s.RequestURI)
	}
	st := p.Stats()
	for op, want := range map[string]int64{"HeadObject": 1, "GetObject": 1, "CreateMultipartUpload": 1} {
		if st[op].Requests != want || len(st[op].Faulted) != 0 {
			t.Errorf("Stats[%s] = %+v", op, st[op])
		}
	}
}

// pattern is a deterministic, unbuffered body source of any length.
type pattern struct{ i byte }

func (p *pattern) Read(b []byte) (int, error) {
	for k := range b {
		b[k] = p.i
		p.i = p.i*31 + 7
	}
	return len(b), nil
}

func TestLargeBodyStreams(t *testing.T) {
	b := newBackend(t)
	p := newProxy(t, b, 1)
	const n = 32 << 20
	h := sha256.New()
	req, _ := http.NewRequest("PUT", p.URL()+"/b/k?partNumber=1&uploadId=u", io.TeeReader(io.LimitReader(&pattern{}, n), h))
	req.ContentLength = n
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s := b.last(t)
	if resp.StatusCode != 200 || s.ContentLength != n || s.BodyLen != n || !bytes.Equal(s.BodySum[:], h.Sum(nil)) {
		t.Errorf("status %d, backend Content-Length %d, got %d bytes, want %d with matching sum", resp.StatusCode, s.ContentLength, s.BodyLen, n)
	}
}

func TestChunkedAndExpectContinue(t *testing.T) {
	b := newBackend(t)
	p := newProxy(t, b, 1)
	body := bytes.Repeat([]byte("aws-chunked framing is opaque to the proxy;"), 30000)

	// Unknown length: the client sends Transfer-Encoding: chunked.
	req, _ := http.NewRequest("PUT", p.URL()+"/b/k", io.NopCloser(bytes.NewReader(body)))
	req.ContentLength = -1
	req.Header.Set("Content-Encoding", "aws-chunked")
	req.Header.Set("X-Amz-Decoded-Content-Length", "1290000")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s := b.last(t)
	if resp.StatusCode != 200 || s.BodySum != sha256.Sum256(body) || s.Header.Get("Content-Encoding") != "aws-chunked" ||
		strings.Join(s.TransferEncoding, ",") != "chunked" {
		t.Errorf("chunked: status %d, backend got %d bytes, TE %v, headers %v", resp.StatusCode, s.BodyLen, s.TransferEncoding, s.Header)
	}

	// Expect: 100-continue: the client must get a 100 before sending.
	c := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	var got100 bool
	trace := &httptrace.ClientTrace{Got100Continue: func() { got100 = true }}
	req, _ = http.NewRequest("PUT", p.URL()+"/b/k2", bytes.NewReader(body))
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	req.Header.Set("Expect", "100-continue")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s = b.last(t)
	if resp.StatusCode != 200 || !got100 || s.BodySum != sha256.Sum256(body) || s.Header.Get("Expect") != "100-continue" {
		t.Errorf("expect: status %d, got100 %v, backend got %d bytes, Expect %q", resp.StatusCode, got100, s.BodyLen, s.Header.Get("Expect"))
	}
}

func s3Code(t *testing.T, body []byte) string {
	var e struct{ Code, Message string }
	if err := xml.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e.Code
}

func TestErrorFaults(t *testing.T) {
	for _, tc := range []struct {
		fault  Fault
		status int
		code   string
	}{{Status500, 500, "InternalError"}, {SlowDown503, 503, "SlowDown"}} {
		b := newBackend(t)
		p := newProxy(t, b, 1, Rule{Op: "PutObject", Fraction: 1, Faults: []Fault{tc.fault}})
		// A body well past socket buffers: the reply must still arrive
		// cleanly, which needs the proxy to drain it.
		c := &http.Client{Transport: &http.Transport{}}
		resp, got, err := do(c, "PUT", p.URL()+"/b/k", make([]byte, 8<<20))
		if err != nil {
			t.Fatalf("%v: %v", tc.fault, err)
		}
		if resp.StatusCode != tc.status || s3Code(t, got) != tc.code || resp.Header.Get("Content-Type") != "application/xml" {
			t.Errorf("%v: %d %q", tc.fault, resp.StatusCode, got)
		}
		// The drained connection survives: the next request reuses it.
		p.SetRules()
		var reused bool
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
			"PUT", p.URL()+"/b/k", strings.NewReader("x"))
		resp, err = c.Do(req)
		if err != nil || resp.StatusCode != 200 || !reused {
			t.Errorf("%v: after: %v %v, reused %v", tc.fault, resp, err, reused)
		} else {
			resp.Body.Close()
		}
		if b.count() != 1 || p.Stats()["PutObject"].Faulted[tc.fault] != 1 {
			t.Errorf("%v: backend saw %d requests, stats %+v", tc.fault, b.count(), p.Stats())
		}
	}
}

func TestResetMidBody(t *testing.T) {
	b := newBackend(t)
	p := newProxy(t, b, 1, Rule{Op: "*", Fraction: 1, Faults: []Fault{ResetMidBody}})

	// A body: the client gets the headers and part of it, then a reset.
	resp, err := fresh.Get(p.URL() + "/b/big")
	if err == nil {
		var got []byte
		got, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("GET: status %d, read %d of %d bytes", resp.StatusCode, len(got), bigLen)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("GET: want connection reset, got %v", err)
	}
	// No body (PutObject): reset before anything is written.
	_, _, err = do(fresh, "PUT", p.URL()+"/b/k", []byte("object"))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("PUT: want connection reset, got %v", err)
	}
	if b.count() != 2 || p.Stats()["GetObject"].Faulted[ResetMidBody] != 1 || p.Stats()["PutObject"].Faulted[ResetMidBody] != 1 {
		t.Errorf("backend saw %d, stats %+v", b.count(), p.Stats())
	}
}

func TestDelay(t *testing.T) {
	b := newBackend(t)
	p := newProxy(t, b, 1, Rule{Op: "GetObject", Fraction: 1, Faults: []Fault{Delay}, Delay: time.Millisecond})
	resp, got, err := do(http.DefaultClient, "GET", p.URL()+"/b/k", nil)
	if err != nil || resp.StatusCode != 200 || string(got) != "hello from backend" {
		t.Fatalf("%v %q %v", resp, got, err)
	}
	if b.count() != 1 || p.Stats()["GetObject"].Faulted[Delay] != 1 {
		t.Errorf("backend saw %d, stats %+v", b.count(), p.Stats())
	}
}

func TestDropCompleteResponse(t *testing.T) {
	b := newBackend(t)
	p := newProxy(t, b, 1, Rule{Op: "CompleteMultipartUpload", Fraction: 1, Faults: []Fault{DropCompleteResponse}})
	body := []byte("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>")
	_, _, err := do(fresh, "POST", p.URL()+"/b/k?uploadId=u1", body)
	if err == nil {
		t.Fatal("client got a response")
	}
	t.Logf("client error: %v", err)
	s := b.last(t)
	if b.count() != 1 || s.RequestURI != "/b/k?uploadId=u1" || s.BodySum != sha256.Sum256(body) {
		t.Errorf("backend saw %d requests, last %+v", b.count(), s)
	}
	if p.Stats()["CompleteMultipartUpload"].Faulted[DropCompleteResponse] != 1 {
		t.Errorf("stats %+v", p.Stats())
	}
}

func TestFractionBounds(t *testing.T) {
	b := newBackend(t)
	p := newProxy(t, b, 7, Rule{Op: "*", Fraction: 0, Faults: []Fault{Status500}})
	for range 20 {
		if resp, _, err := do(http.DefaultClient, "PUT", p.URL()+"/b/k", []byte("x")); err != nil || resp.StatusCode != 200 {
			t.Fatalf("fraction 0: %v %v", resp, err)
		}
	}
	if err := p.SetRules(Rule{Op: "PutObject", Fraction: 1, Faults: []Fault{Status500, SlowDown503}}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		resp, _, err := do(http.DefaultClient, "PUT", p.URL()+"/b/k", []byte("x"))
		if err != nil || (resp.StatusCode != 500 && resp.StatusCode != 503) {
			t.Fatalf("fraction 1: %v %v", resp, err)
		}
		// Other operations are not matched by the rule.
		if resp, _, err := do(http.DefaultClient, "GET", p.URL()+"/b/k", nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET under a PutObject rule: %v %v", resp, err)
		}
	}
	st := p.Stats()
	put, get := st["PutObject"], st["GetObject"]
	if put.Requests != 40 || put.Faulted[Status500]+put.Faulted[SlowDown503] != 20 || get.Requests != 20 || len(get.Faulted) != 0 {
		t.Errorf("stats %+v", st)
	}
	if b.count() != 40 {
		t.Errorf("backend saw %d, want 40", b.count())
	}
}

func TestSeededSelectionIsDeterministic(t *testing.T) {
	run := func(seed uint64) []int {
		b := newBackend(t)
		p := newProxy(t, b, seed, Rule{Op: "*", Fraction: 0.5, Faults: []Fault{Status500, SlowDown503, None}})
		var out []int
		for i := range 64 {
			method := []string{"PUT", "GET", "HEAD"}[i%3]
			resp, _, err := do(http.DefaultClient, method, p.URL()+"/b/k", []byte("x"))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, resp.StatusCode)
		}
		return out
	}
	a, b := run(42), run(42)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different faults:\n%v\n%v", a, b)
	}
	kinds := map[int]bool{}
	for _, s := range a {
		kinds[s] = true
	}
	if !kinds[200] || !kinds[500] || !kinds[503] {
		t.Errorf("seed 42 gave only %v", kinds)
	}
	t.Logf("seed 42: %v", a)
}

func TestSetRulesAtRuntime(t *testing.T) {
	b := newBackend(t)
	p := newProxy(t, b, 1, Rule{Op: "UploadPart", Fraction: 1, Faults: []Fault{Status500}})
	url := p.URL() + "/b/k?partNumber=1&uploadId=u"
	if resp, _, _ := do(http.DefaultClient, "PUT", url, []byte("x")); resp == nil || resp.StatusCode != 500 {
		t.Fatalf("100%%: %v", resp)
	}
	if err := p.SetRules(); err != nil {
		t.Fatal(err)
	}
	if resp, _, _ := do(http.DefaultClient, "PUT", url, []byte("x")); resp == nil || resp.StatusCode != 200 {
		t.Fatalf("0%%: %v", resp)
	}
	if err := p.SetRules(Rule{Op: "UploadPart", Fraction: 1, Faults: []Fault{SlowDown503}}); err != nil {
		t.Fatal(err)
	}
	if resp, _, _ := do(http.DefaultClient, "PUT", url, []byte("x")); resp == nil || resp.StatusCode != 503 {
		t.Fatalf("503: %v", resp)
	}
	if err := p.SetRules(Rule{Op: "UploadPrat", Fraction: 1, Faults: []Fault{Status500}}); err == nil {
		t.Error("SetRules accepted an unknown operation")
	}
}

func TestConcurrentRequests(t *testing.T) {
	b := newBackend(t)
	p := newProxy(t, b, 3, Rule{Op: "*", Fraction: 0.5, Faults: []Fault{Status500, Delay}, Delay: time.Millisecond})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 16 {
				if _, _, err := do(http.DefaultClient, "PUT", p.URL()+"/b/k", []byte("x")); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	c := p.Stats()["PutObject"]
	if c.Requests != 128 || int64(b.count()) != 128-c.Faulted[Status500] {
		t.Errorf("stats %+v, backend saw %d", c, b.count())
	}
}

func TestNewRejects(t *testing.T) {
	b := newBackend(t)
	for _, target := range []string{"http://example.com:80", "https://127.0.0.1:9000", "http://10.0.0.1:9000", "http://127.0.0.1", "::"} {
		if p, err := New(target, 1); err == nil {
			p.Close()
			t.Errorf("New(%q) accepted", target)
		}
	}
	for _, r := range []Rule{
		{Op: "PutObjekt", Fraction: 1, Faults: []Fault{Status500}},
		{Op: "*", Fraction: 1.5, Faults: []Fault{Status500}},
		{Op: "*", Fraction: -0.1, Faults: []Fault{Status500}},
		{Op: "*", Fraction: 1},
		{Op: "*", Fraction: 1, Faults: []Fault{Fault(99)}},
		{Op: "*", Fraction: 1, Faults: []Fault{Delay}, Delay: time.Hour},
	} {
		if p, err := New(b.URL, 1, r); err == nil {
			p.Close()
			t.Errorf("New accepted rule %+v", r)
		}
	}
}

func TestCloseCancelsDelayedRequest(t *testing.T) {
	b := newBackend(t)
	p := newProxy(t, b, 1, Rule{Op: "*", Fraction: 1, Faults: []Fault{Delay}, Delay: MaxDelay})
	errc := make(chan error, 1)
	go func() {
		_, _, err := do(fresh, "GET", p.URL()+"/b/k", nil)
		errc <- err
	}()
	for p.Stats()["GetObject"].Requests == 0 {
		runtime.Gosched() // wait until the request is inside its delay
	}
	p.Close()
	if err := <-errc; err == nil {
		t.Error("delayed request succeeded after Close")
	}
	if b.count() != 0 {
		t.Errorf("backend saw %d requests", b.count())
	}
}
