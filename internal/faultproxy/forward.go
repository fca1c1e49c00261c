package faultproxy

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// newTransport is the proxy's own connection pool to the backend: no
// environment proxy, no transparent gzip (it would add Accept-Encoding and
// rewrite bodies), and timeouts that fit a loopback server.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          128,
		MaxIdleConnsPerHost:   128,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}

// hopHeaders are per-connection headers a proxy must not pass on. SigV4
// never signs them.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive",
	"Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// roundTrip sends r to the backend as the client signed it: same method,
// request-target bytes (raw path and raw query), headers and Host, with the
// body streamed. Expect: 100-continue passes end to end: the transport
// waits for the backend's 100 before reading r.Body, and that first read
// makes our server send its own 100 to the client.
func roundTrip(t *http.Transport, target *url.URL, r *http.Request) (*http.Response, error) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = target.Scheme, target.Host
	out.URL.Opaque = rawPath(r, target.Host)
	out.Host = r.Host
	out.Close = false
	out.Trailer = r.Trailer // filled by the server as the body hits EOF
	if r.ContentLength == 0 {
		out.Body = nil
	}
	removeHopHeaders(out.Header)
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header["User-Agent"] = nil // keep Go from adding its own
	}
	return t.RoundTrip(out)
}

// rawPath is the path of the request-target exactly as received; a path
// starting with "//" is sent in absolute form so it is not read as a host.
func rawPath(r *http.Request, host string) string {
	p, _, _ := strings.Cut(r.RequestURI, "?")
	if !strings.HasPrefix(p, "/") {
		p = r.URL.EscapedPath() // absolute-form request: fall back
	}
	if strings.HasPrefix(p, "//") {
		return "//" + host + p
	}
	return p
}

// copyHeader copies the backend's response headers, less hop-by-hop ones.
func copyHeader(dst, src http.Header) {
	for k, vv := range src {
		dst[k] = append([]string(nil), vv...)
	}
	removeHopHeaders(dst)
}

// copyResponse writes the backend's response unchanged, streaming the body.
func copyResponse(w http.ResponseWriter, resp *http.Response) {
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}
