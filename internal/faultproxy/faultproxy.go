// Package faultproxy is a fault-injecting HTTP reverse proxy to put in
// front of a real S3-compatible server (MinIO) in tests. It listens on
// 127.0.0.1, forwards to a loopback backend exactly what the client sent
// (so SigV4 signatures made for the proxy's address still verify), and
// fails a seeded, reproducible fraction of chosen S3 operations.
package faultproxy

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Proxy is one running fault-injecting proxy.
type Proxy struct {
	target    *url.URL
	transport *http.Transport
	srv       *http.Server
	url       string
	cancel    context.CancelFunc

	mu    sync.Mutex // guards the fields below
	rng   *rand.Rand
	rules []Rule
	stats map[string]Counts
}

// New starts a proxy on 127.0.0.1:0 in front of target, a loopback
// http://host:port URL, choosing faults from seed.
func New(target string, seed uint64, rules ...Rule) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" || u.Port() == "" || !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("faultproxy: target %q is not http://<loopback>:<port>", target)
	}
	p := &Proxy{target: u, transport: newTransport(), stats: map[string]Counts{},
		rng: rand.New(rand.NewPCG(seed, 0x5eed_fa17))}
	if err := p.SetRules(rules...); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.url, p.cancel = "http://"+ln.Addr().String(), cancel
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serve),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go p.srv.Serve(ln)
	return p, nil
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// URL is the proxy's address, http://127.0.0.1:<port>; sign requests for it.
func (p *Proxy) URL() string { return p.url }

// SetRules replaces the rules; requests already decided keep their fault.
func (p *Proxy) SetRules(rules ...Rule) error {
	for _, r := range rules {
		if err := r.validate(); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append([]Rule(nil), rules...)
	return nil
}

// Stats returns a copy of the counts per operation seen so far.
func (p *Proxy) Stats() map[string]Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]Counts, len(p.stats))
	for op, c := range p.stats {
		out[op] = Counts{Requests: c.Requests, Faulted: maps.Clone(c.Faulted)}
	}
	return out
}

// Close stops the listener and cuts open connections; in-flight requests
// are cancelled and get no reply, so their handlers return promptly.
func (p *Proxy) Close() error {
	p.cancel()
	err := p.srv.Close()
	p.transport.CloseIdleConnections()
	return err
}

// begin classifies and counts a request and decides its fault.
func (p *Proxy) begin(r *http.Request) (Fault, time.Duration) {
	op := Classify(r)
	p.mu.Lock()
	defer p.mu.Unlock()
	f, delay := p.decide(op)
	c := p.stats[op]
	if c.Faulted == nil {
		c.Faulted = map[Fault]int64{}
	}
	c.Requests++
	if f != None {
		c.Faulted[f]++
	}
	p.stats[op] = c
	return f, delay
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	f, delay := p.begin(r)
	switch f {
	case Status500:
		replyError(w, r, http.StatusInternalServerError, "InternalError")
		return
	case SlowDown503:
		replyError(w, r, http.StatusServiceUnavailable, "SlowDown")
		return
	case Delay:
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done(): // client gone or proxy closing
			t.Stop()
			abort(w, false) // returning would send an empty 200
			return
		}
	}
	resp, err := roundTrip(p.transport, p.target, r)
	if err != nil {
		if r.Context().Err() != nil {
			abort(w, false)
		} else {
			replyError(w, r, http.StatusBadGateway, "BadGateway")
		}
		return
	}
	defer resp.Body.Close()
	switch f {
	case ResetMidBody:
		resetMidBody(w, r, resp)
	case DropCompleteResponse:
		// Read the whole reply so the backend has finished the operation
		// (MinIO keeps a CompleteMultipartUpload alive with whitespace).
		io.Copy(io.Discard, resp.Body)
		abort(w, false)
	default:
		copyResponse(w, resp)
	}
}
