package s3sink_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/internal/s3test"
	"github.com/zspool/zspool/s3sink"
)

// listingProxy forwards to a real server and adds uploads to every
// ListMultipartUploads answer: a listing with entries that do not exist,
// as the pinned MinIO leaves after an abort races a cut-off complete.
// ListParts of the id "broken" answers 500.
func listingProxy(t *testing.T, target string, extra ...[2]string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		if _, ok := r.Request.URL.Query()["uploads"]; !ok || r.Request.Method != http.MethodGet {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		var add strings.Builder
		for _, e := range extra {
			fmt.Fprintf(&add, "<Upload><Key>%s</Key><UploadId>%s</UploadId><Initiated>2026-11-25T00:00:00.000Z</Initiated></Upload>", e[0], e[1])
		}
		body = bytes.Replace(body, []byte("</ListMultipartUploadsResult>"), []byte(add.String()+"</ListMultipartUploadsResult>"), 1)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("uploadId") == "broken" && r.Method == http.MethodGet {
			http.Error(w, "<Error><Code>InternalError</Code></Error>", http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestListedUploadsThatDoNotExistAreNotReported(t *testing.T) {
	s, creds := bucketOn(t, s3test.StartMinIO, "ghosts")
	ctx := context.Background()
	open := func(endpoint string) *s3sink.Sink {
		sink, err := s3sink.New(ctx, zap.NewNop(), s3sink.Config{Destination: config.Destination{
			URL: "s3://ghosts/ds", Endpoint: endpoint, PathStyle: true, CredentialsFile: creds, PartSize: config.MinPartSize,
		}, Retry: config.Retry{MaxAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return sink
	}
	// A real upload, left open: its first part is sent, nothing completes it.
	w, err := open(s.Endpoint).Create(ctx, "real")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(bytes.Repeat([]byte{1}, 2*int(config.MinPartSize))); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		extra   [][2]string
		want    []string
		wantErr bool
	}{
		{name: "a real upload is reported", want: []string{"ds/real"}},
		{name: "an entry whose ListParts says NoSuchUpload is left out",
			extra: [][2]string{{"ds/ghost", "no-such-upload-id"}}, want: []string{"ds/real"}},
		{name: "an entry that cannot be checked fails the listing rather than being dropped",
			extra: [][2]string{{"ds/unknown", "broken"}}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ups, err := open(listingProxy(t, s.Endpoint, tc.extra...)).PendingUploads(ctx, "")
			if tc.wantErr {
				if err == nil {
					t.Fatalf("listing succeeded (%v), want an error", ups)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, u := range ups {
				keys = append(keys, u.Key)
			}
			if fmt.Sprint(keys) != fmt.Sprint(tc.want) {
				t.Fatalf("pending uploads %v, want %v", keys, tc.want)
			}
		})
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
}
