package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Outcome is what the daemon tells the world about a finished job: the
// body of each webhook POST and the stdin of each notify.exec command,
// and an entry of the jobs history.
type Outcome struct {
	Event    string    `json:"event"` // "stored" or "failed"
	Job      string    `json:"job"`   // the manifest's stem
	Dataset  string    `json:"dataset,omitempty"`
	URI      string    `json:"uri,omitempty"` // where the stored dataset is, or would have gone
	Manifest string    `json:"manifest"`
	Data     string    `json:"data,omitempty"`
	BytesIn  int64     `json:"bytes_in"`
	BytesOut int64     `json:"bytes_out"`
	Ratio    float64   `json:"ratio"`
	Seconds  float64   `json:"seconds"`
	Error    string    `json:"error,omitempty"`
	Kept     string    `json:"kept,omitempty"` // a failed job: where its files are now
	Time     time.Time `json:"time"`
	Version  string    `json:"zspool_version"`
}

// AnnounceOptions configure the announcer (notify: in the config).
type AnnounceOptions struct {
	Webhook string   // http(s) URL, or ""; may carry a token, so never logged whole
	Exec    []string // argv, or nil
	Queue   int      // outcomes waiting at most; the oldest is dropped beyond
	Timeout time.Duration
}

// Backoff of a failing notification: doubling from announceFirstRetry up
// to announceMaxRetry between attempts, given up after announceGiveUp.
const (
	announceFirstRetry = time.Second
	announceMaxRetry   = 5 * time.Minute
	announceGiveUp     = time.Hour
)

// announceDrain is how long a stopping daemon waits for its queued
// announcements to go out.
const announceDrain = 5 * time.Second

// drain waits up to timeout for the queue to empty.
func (a *announcer) drain(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		a.mu.Lock()
		n := len(a.queue)
		a.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// announcer delivers outcomes in order, off the daemon's paths: add never
// blocks, a full queue drops its oldest entry (with a warning and a
// metric), and a receiver that is down delays only the announcements.
type announcer struct {
	opt  AnnounceOptions
	log  *zap.Logger
	m    *metrics
	http *http.Client

	mu    sync.Mutex
	queue []Outcome
	wake  chan struct{}
}

func newAnnouncer(log *zap.Logger, m *metrics, opt AnnounceOptions) *announcer {
	return &announcer{opt: opt, log: log, m: m, http: &http.Client{Timeout: opt.Timeout}, wake: make(chan struct{}, 1)}
}

func (a *announcer) enabled() bool { return a.opt.Webhook != "" || len(a.opt.Exec) > 0 }

// add queues an outcome; it never blocks.
func (a *announcer) add(o Outcome) {
	if !a.enabled() {
		return
	}
	a.mu.Lock()
	if len(a.queue) >= max(1, a.opt.Queue) {
		dropped := a.queue[0]
		a.queue = a.queue[1:]
		a.m.notifyDrop.Inc()
		a.log.Warn("notify: queue full, dropping the oldest notification", zap.String("job", dropped.Job), zap.String("event", dropped.Event))
	}
	a.queue = append(a.queue, o)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// run delivers until ctx ends; what is still queued then is logged.
func (a *announcer) run(ctx context.Context) {
	for {
		a.mu.Lock()
		var o Outcome
		have := len(a.queue) > 0
		if have {
			o = a.queue[0]
		}
		a.mu.Unlock()
		if !have {
			select {
			case <-a.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		a.deliver(ctx, o)
		a.mu.Lock()
		if len(a.queue) > 0 && a.queue[0].Job == o.Job && a.queue[0].Time.Equal(o.Time) {
			a.queue = a.queue[1:]
		}
		n := len(a.queue)
		a.mu.Unlock()
		if ctx.Err() != nil {
			if n > 0 {
				a.log.Warn("notify: stopping with notifications not sent", zap.Int("pending", n))
			}
			return
		}
	}
}

// deliver sends one outcome to every receiver, retrying each with backoff.
func (a *announcer) deliver(ctx context.Context, o Outcome) {
	body, err := json.Marshal(o)
	if err != nil {
		a.log.Error("notify: encoding", zap.Error(err))
		return
	}
	if a.opt.Webhook != "" {
		a.retry(ctx, o, "webhook", func(ctx context.Context) error { return a.post(ctx, body) })
	}
	if len(a.opt.Exec) > 0 {
		a.retry(ctx, o, "exec", func(ctx context.Context) error { return a.exec(ctx, body) })
	}
}

func (a *announcer) retry(ctx context.Context, o Outcome, via string, send func(context.Context) error) {
	start, wait := time.Now(), announceFirstRetry
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, a.opt.Timeout)
		err := send(actx)
		cancel()
		if err == nil {
			a.log.Debug("notify: sent", zap.String("via", via), zap.String("job", o.Job), zap.String("event", o.Event))
			return
		}
		a.m.notifyFail.Inc()
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > announceGiveUp {
			a.m.notifyDrop.Inc()
			a.log.Error("notify: giving up", zap.String("via", via), zap.String("job", o.Job), zap.Int("attempts", attempt), zap.Error(err))
			return
		}
		a.log.Warn("notify: failed; retrying", zap.String("via", via), zap.String("job", o.Job), zap.Int("attempt", attempt),
			zap.Duration("in", wait), zap.Error(err))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		wait = min(2*wait, announceMaxRetry)
	}
}

func (a *announcer) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.opt.Webhook, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", webhookHost(a.opt.Webhook), err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "zspool")
	resp, err := a.http.Do(req)
	if err != nil {
		// The client's error quotes the URL, token included: name the host.
		return fmt.Errorf("webhook %s: request failed", webhookHost(a.opt.Webhook))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook %s: HTTP %d", webhookHost(a.opt.Webhook), resp.StatusCode)
	}
	return nil
}

func (a *announcer) exec(ctx context.Context, body []byte) error {
	cmd := exec.CommandContext(ctx, a.opt.Exec[0], a.opt.Exec[1:]...)
	cmd.Stdin = bytes.NewReader(body)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		tail := out.Bytes()
		if len(tail) > 512 {
			tail = tail[len(tail)-512:]
		}
		return fmt.Errorf("%s: %w: %s", a.opt.Exec[0], err, bytes.TrimSpace(tail))
	}
	return nil
}

// webhookHost is what may be logged of a webhook URL: its host.
func webhookHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host
}
