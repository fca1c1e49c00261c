package s3sink_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/s3sink"
)

// fakeS3 answers the few requests a sink with conditional writes off makes
// to store objects, keeping each object's bytes, and records the payload
// hash every request that carried bytes was signed with.
type fakeS3 struct {
	mu      sync.Mutex
	objects map[string][]byte
	parts   map[string][][]byte // by upload key
	hashes  []string            // x-amz-content-sha256 of PutObject and UploadPart
	sums    []string            // the SHA-256 of those bodies
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	key := r.URL.Path
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodHead && strings.Count(key, "/") == 1: // HeadBucket
	case r.Method == http.MethodHead:
		data, ok := f.objects[key]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.Header().Set("x-amz-checksum-crc32c", base64.StdEncoding.EncodeToString(b[:]))
		w.Header().Set("x-amz-checksum-type", "FULL_OBJECT")
	case r.Method == http.MethodPost && q.Has("uploads"):
		fmt.Fprintf(w, "<InitiateMultipartUploadResult><UploadId>up</UploadId></InitiateMultipartUploadResult>")
	case r.Method == http.MethodPost && q.Has("uploadId"):
		var whole []byte
		for _, p := range f.parts[key] {
			whole = append(whole, p...)
		}
		f.objects[key] = whole
		fmt.Fprintf(w, "<CompleteMultipartUploadResult><ETag>\"e\"</ETag></CompleteMultipartUploadResult>")
	case r.Method == http.MethodPut:
		f.hashes = append(f.hashes, r.Header.Get("X-Amz-Content-Sha256"))
		sum := sha256.Sum256(body)
		f.sums = append(f.sums, hex.EncodeToString(sum[:]))
		if q.Has("partNumber") {
			f.parts[key] = append(f.parts[key], body)
		} else {
			f.objects[key] = body
		}
		w.Header().Set("ETag", `"e"`)
	default:
		w.WriteHeader(http.StatusNotImplemented)
	}
}

// Every part and object goes out with its CRC header, which keeps the SDK
// from computing a checksum of its own. Over TLS its S3 client still signs
// such a request as UNSIGNED-PAYLOAD (TLS and the signed CRC guard the
// body), so the bytes are hashed once, by the CRC; over plain HTTP it
// hashes them with SHA-256 as well (~1 GB/s a core). This pins that down:
// an SDK update that began hashing over TLS would cost a third of the
// upload's CPU.
func TestObjectBytesAreSignedUnhashedOnlyOverTLS(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "fake")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
	for _, tc := range []struct {
		name     string
		tls      bool
		unsigned bool
	}{
		{"over https the bytes are not hashed twice", true, true},
		{"over plain http the bytes stay signed", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeS3{objects: map[string][]byte{}, parts: map[string][][]byte{}}
			dst := config.Destination{URL: "s3://bkt/ds", PathStyle: true, ConditionalWrites: "off", PartSize: config.MinPartSize}
			if tc.tls {
				srv := httptest.NewTLSServer(f)
				defer srv.Close()
				ca := filepath.Join(t.TempDir(), "ca.pem")
				cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
				if err := os.WriteFile(ca, cert, 0o600); err != nil {
					t.Fatal(err)
				}
				dst.Endpoint, dst.CABundle = srv.URL, ca
			} else {
				srv := httptest.NewServer(f)
				defer srv.Close()
				dst.Endpoint = srv.URL
			}
			ctx := context.Background()
			sink, err := s3sink.New(ctx, zap.NewNop(), s3sink.Config{Destination: dst})
			if err != nil {
				t.Fatal(err)
			}
			if err := sink.Put(ctx, "zarr.json", []byte(`{"zarr_format": 3}`)); err != nil {
				t.Fatal(err)
			}
			w, err := sink.Create(ctx, "0/c/0")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(make([]byte, config.MinPartSize+1000)); err != nil {
				t.Fatal(err)
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.hashes) != 3 {
				t.Fatalf("%d requests carried bytes, want 3 (a document, two parts)", len(f.hashes))
			}
			for i, h := range f.hashes {
				want := f.sums[i]
				if tc.unsigned {
					want = "UNSIGNED-PAYLOAD"
				}
				if h != want {
					t.Errorf("request %d: x-amz-content-sha256 %q, want %q", i, h, want)
				}
			}
		})
	}
}
