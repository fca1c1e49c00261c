package faultproxy

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
)

// maxDrain bounds how much request body an error reply reads before giving
// up and closing the connection instead (parts are at most 64 MiB).
const maxDrain = 256 << 20

// replyError answers like S3 does when it fails a request, without
// forwarding it. The request body is read first, so a client still sending
// it sees the reply rather than a broken pipe; a body too large to drain
// gets Connection: close instead.
func replyError(w http.ResponseWriter, r *http.Request, status int, code string) {
	n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, maxDrain+1))
	if n > maxDrain {
		w.Header().Set("Connection", "close")
	}
	body := "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code +
		"</Code><Message>injected</Message><RequestId>faultproxy</RequestId></Error>"
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// resetMidBody writes the backend's status, headers and about half of its
// body, then resets the connection. A response with no body (HEAD, 204,
// 304, Content-Length 0 — PutObject, UploadPart) is reset before anything
// is written. A body of unknown length is judged by its first 64 KiB.
func resetMidBody(w http.ResponseWriter, r *http.Request, resp *http.Response) {
	n := resp.ContentLength / 2
	body := io.Reader(resp.Body)
	empty := r.Method == http.MethodHead || resp.ContentLength == 0 ||
		resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified
	if !empty {
		if n < 0 {
			head, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			n, body = int64(len(head)/2), bytes.NewReader(head)
		}
		copyHeader(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		io.CopyN(w, body, n)
		// Hijack flushes the header but not bytes still buffered above it.
		http.NewResponseController(w).Flush()
	}
	abort(w, true)
}

// abort takes the connection from the server and closes it, with a TCP
// RST (SO_LINGER 0) when reset is set, else an ordinary FIN. Nothing the
// handler has not flushed reaches the client.
func abort(w http.ResponseWriter, reset bool) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // the server closes the connection
	}
	buf.Flush()
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		tc.SetLinger(0)
	}
	conn.Close()
}
