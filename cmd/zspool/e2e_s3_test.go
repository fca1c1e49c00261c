package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/internal/faultproxy"
	"github.com/zspool/zspool/internal/s3test"
	"github.com/zspool/zspool/s3sink"
	"github.com/zspool/zspool/zarr"
)

// backend is a real S3 server started for one test, with a bucket and a
// credentials file (the LoadCredential= path) for zspool to use.
type backend struct {
	srv   *s3test.Server
	creds string
}

const testBucket = "zspool"

func startBackend(t *testing.T, start func(testing.TB) *s3test.Server) *backend {
	t.Helper()
	// TestMain keeps the SDK away from IMDS and any AWS settings.
	srv := start(t)
	srv.CreateBucket(t, testBucket)
	creds := filepath.Join(t.TempDir(), "credentials")
	writeFile(t, creds, fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", srv.AccessKey, srv.SecretKey))
	return &backend{srv: srv, creds: creds}
}

func eachBackend(t *testing.T, fn func(t *testing.T, b *backend)) {
	for _, s := range []struct {
		name  string
		start func(testing.TB) *s3test.Server
	}{{"minio", s3test.StartMinIO}, {"versitygw", s3test.StartVersityGW}} {
		t.Run(s.name, func(t *testing.T) { fn(t, startBackend(t, s.start)) })
	}
}

// flags are the s3 options of a command run against endpoint.
func (b *backend) flags(endpoint string, extra ...string) []string {
	return append([]string{"--endpoint", endpoint, "--path-style", "--credentials-file", b.creds,
		"--max-backoff", "50ms", "--quiet"}, extra...)
}

func (b *backend) sink(t *testing.T, prefix string) *s3sink.Sink {
	t.Helper()
	s, err := s3sink.New(context.Background(), zap.NewNop(), s3sink.Config{Destination: config.Destination{
		URL: "s3://" + testBucket + "/" + prefix, Endpoint: b.srv.Endpoint, PathStyle: true,
		CredentialsFile: b.creds, ConditionalWrites: "off",
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sameObjects holds every object of a dataset on S3 to the local output of
// the same input, byte for byte, and the key sets to each other.
func sameObjects(t *testing.T, local string, s *s3sink.Sink, root string) int {
	t.Helper()
	ctx := context.Background()
	var want []string
	err := filepath.WalkDir(filepath.Join(local, root), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(local, p)
		key := filepath.ToSlash(rel)
		want = append(want, key)
		lb, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sb, err := s.Get(ctx, key)
		if err != nil {
			return err
		}
		if !bytes.Equal(lb, sb) {
			return fmt.Errorf("%s: S3 object (%d bytes) differs from the local file (%d bytes)", key, len(sb), len(lb))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.List(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("S3 keys %v\nlocal keys %v", got, want)
	}
	return len(want)
}

func TestS3OutputIsByteIdenticalToTheLocalOutputOnEveryBackend(t *testing.T) {
	shapes := append(slices.Clone(issueShapes), struct {
		name string
		dims []dimSpec
	}{"multipart_shard", []dimSpec{{8, 1, 8}, {1024, 256, 4}, {1024, 256, 4}}})
	spool, local := t.TempDir(), t.TempDir()
	var manifests []string
	for i, sh := range shapes {
		a := newAcquisition(sh.name, "uint16", sh.dims)
		a.randomRaw(uint64(100+i), elems(sh.dims))
		manifests = append(manifests, a.write(t, spool))
		if _, stderr, err := zspool(t, "convert", manifests[i], "--dest", local, "--quiet"); err != nil {
			t.Fatalf("local convert %s: %v\n%s", sh.name, err, stderr)
		}
	}
	eachBackend(t, func(t *testing.T, b *backend) {
		dest := "s3://" + testBucket + "/same"
		s := b.sink(t, "same")
		for i, sh := range shapes {
			args := append([]string{"convert", manifests[i], "--dest", dest, "--part-size", "5MiB"}, b.flags(b.srv.Endpoint)...)
			if _, stderr, err := zspool(t, args...); err != nil {
				t.Fatalf("convert %s: %v\n%s", sh.name, err, stderr)
			}
			n := sameObjects(t, local, s, sh.name+".ome.zarr")
			args = append([]string{"verify", dest + "/" + sh.name + ".ome.zarr", "--raw", filepath.Join(spool, sh.name+".raw")}, b.flags(b.srv.Endpoint)...)
			if out, stderr, err := zspool(t, args...); err != nil {
				t.Fatalf("verify %s: %v\n%s%s", sh.name, err, out, stderr)
			}
			t.Logf("%s: %d objects identical to the local output", sh.name, n)
		}
		// A second conversion of the same input into the same place meets
		// the stored objects: If-None-Match refuses them, and HeadObject
		// settles that they already hold exactly these bytes.
		args := append([]string{"convert", manifests[0], "--dest", dest, "--conditional-writes", "on"}, b.flags(b.srv.Endpoint)...)
		if _, stderr, err := zspool(t, args...); err != nil {
			t.Fatalf("rerun: %v\n%s", err, stderr)
		}
	})
}

func TestLargeShardsUploadAsMultipartObjects(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		spool := t.TempDir()
		// One 32 MiB shard of incompressible data, 8 MiB parts: 4 full
		// parts and a last one carrying the index.
		a := newAcquisition("big", "uint16", []dimSpec{{16, 1, 16}, {1024, 256, 4}, {1024, 256, 4}})
		a.manifest["compression"] = map[string]any{"codec": "none"}
		a.randomRaw(5, 16*1024*1024)
		mp := a.write(t, spool)
		args := append([]string{"convert", mp, "--dest", "s3://" + testBucket + "/mp", "--part-size", "8MiB"}, b.flags(b.srv.Endpoint)...)
		if _, stderr, err := zspool(t, args...); err != nil {
			t.Fatalf("convert: %v\n%s", err, stderr)
		}
		resp := b.srv.Request(t, "HEAD", "/"+testBucket+"/mp/big.ome.zarr/0/c/0/0/0", nil, nil)
		etag := strings.Trim(resp.Header.Get("ETag"), `"`)
		if resp.Status != 200 || !strings.HasSuffix(etag, "-5") {
			t.Fatalf("HEAD: %d, ETag %q, want a 5-part multipart ETag", resp.Status, etag)
		}
	})
}

func TestConversionsSurviveTenPercentFaultsAndLeaveNoUploadAtFullFailure(t *testing.T) {
	b := startBackend(t, s3test.StartMinIO)
	spool := t.TempDir()
	all := []faultproxy.Fault{faultproxy.Status500, faultproxy.SlowDown503, faultproxy.ResetMidBody, faultproxy.Delay, faultproxy.DropCompleteResponse}
	proxy, err := faultproxy.New(b.srv.Endpoint, 7, faultproxy.Rule{Op: "*", Fraction: 0.10, Faults: all, Delay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	// The last shape has four 16 MiB shards of noise: a dozen parts and four
	// completions for the faults to land on.
	shapes := append(slices.Clone(issueShapes[:4]), struct {
		name string
		dims []dimSpec
	}{"multipart_shard", []dimSpec{{8, 1, 8}, {2048, 256, 4}, {2048, 256, 4}}})
	for i, sh := range shapes {
		a := newAcquisition(sh.name, "uint16", sh.dims)
		a.randomRaw(uint64(200+i), elems(sh.dims))
		mp := a.write(t, spool)
		args := append([]string{"convert", mp, "--dest", "s3://" + testBucket + "/faults", "--part-size", "5MiB", "--max-attempts", "12"}, b.flags(proxy.URL())...)
		if _, stderr, err := zspool(t, args...); err != nil {
			t.Fatalf("convert %s through 10%% faults: %v\n%s", sh.name, err, stderr)
		}
		args = append([]string{"verify", "s3://" + testBucket + "/faults/" + sh.name + ".ome.zarr", "--raw", filepath.Join(spool, sh.name+".raw")}, b.flags(b.srv.Endpoint)...)
		if out, stderr, err := zspool(t, args...); err != nil {
			t.Fatalf("verify %s: %v\n%s%s", sh.name, err, out, stderr)
		}
	}
	faulted := int64(0)
	for op, c := range proxy.Stats() {
		for _, n := range c.Faulted {
			faulted += n
		}
		t.Logf("%s: %d requests, faults %v", op, c.Requests, c.Faulted)
	}
	if faulted == 0 {
		t.Fatal("the proxy injected no fault: the test proved nothing")
	}

	// Every part fails: the shard gives up, the error names it, and its
	// upload is aborted rather than left behind.
	if err := proxy.SetRules(faultproxy.Rule{Op: "UploadPart", Fraction: 1, Faults: []faultproxy.Fault{faultproxy.Status500, faultproxy.ResetMidBody}}); err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(spool, "multipart_shard.json")
	args := append([]string{"convert", mp, "--dest", "s3://" + testBucket + "/dead", "--part-size", "5MiB", "--max-attempts", "3"}, b.flags(proxy.URL())...)
	_, _, err = zspool(t, args...)
	if err == nil || !strings.Contains(err.Error(), "shard multipart_shard.ome.zarr/0/c/0/") || !strings.Contains(err.Error(), "part ") {
		t.Fatalf("err = %v, want one naming the shard and the part", err)
	}
	ups, lerr := b.sink(t, "").PendingUploads(context.Background(), "")
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(ups) != 0 {
		t.Fatalf("%d multipart uploads left behind: %v", len(ups), ups)
	}
	if _, serr := b.sink(t, "dead").Size(context.Background(), "multipart_shard.ome.zarr/zarr.json"); !errors.Is(serr, errNotFoundS3()) {
		t.Fatalf("the group document was published over a failed conversion: %v", serr)
	}
}

func TestACompleteWhoseAnswerIsLostIsSettledByHeadObject(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		proxy, err := faultproxy.New(b.srv.Endpoint, 1, faultproxy.Rule{Op: "CompleteMultipartUpload", Fraction: 1, Faults: []faultproxy.Fault{faultproxy.DropCompleteResponse}})
		if err != nil {
			t.Fatal(err)
		}
		defer proxy.Close()
		spool := t.TempDir()
		a := newAcquisition("lost", "uint16", []dimSpec{{8, 1, 8}, {1024, 256, 4}, {1024, 256, 4}})
		a.randomRaw(9, 8*1024*1024)
		mp := a.write(t, spool)
		for _, cw := range []string{"on", "off"} {
			prefix := "lost-" + cw
			args := append([]string{"convert", mp, "--dest", "s3://" + testBucket + "/" + prefix, "--part-size", "5MiB", "--conditional-writes", cw}, b.flags(proxy.URL())...)
			if _, stderr, err := zspool(t, args...); err != nil {
				t.Fatalf("conditional writes %s: %v\n%s", cw, err, stderr)
			}
			args = append([]string{"verify", "s3://" + testBucket + "/" + prefix + "/lost.ome.zarr", "--raw", filepath.Join(spool, "lost.raw")}, b.flags(b.srv.Endpoint)...)
			if out, stderr, err := zspool(t, args...); err != nil {
				t.Fatalf("verify: %v\n%s%s", err, out, stderr)
			}
		}
		if proxy.Stats()["CompleteMultipartUpload"].Requests == 0 {
			t.Fatal("no CompleteMultipartUpload went through the proxy")
		}
	})
}

func TestStartupFailuresGiveOneClearErrorWithoutSecrets(t *testing.T) {
	b := startBackend(t, s3test.StartMinIO)
	spool := t.TempDir()
	a := newAcquisition("small", "uint8", []dimSpec{{2, 1, 1}, {8, 8, 1}})
	a.randomRaw(1, 16)
	mp := a.write(t, spool)
	wrong := filepath.Join(t.TempDir(), "wrong")
	const badSecret = "ThisSecretMustNeverBePrinted0123456789ab"
	writeFile(t, wrong, fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", b.srv.AccessKey, badSecret))
	closed := "http://127.0.0.1:1"
	cases := []struct {
		name, dest, endpoint, creds, want string
	}{
		{"wrong credentials", "s3://" + testBucket + "/x", b.srv.Endpoint, wrong, "denied"},
		{"a missing bucket", "s3://no-such-bucket/x", b.srv.Endpoint, b.creds, `bucket "no-such-bucket" does not exist`},
		{"an unreachable endpoint", "s3://" + testBucket + "/x", closed, b.creds, "unreachable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := zspool(t, "convert", mp, "--dest", tc.dest, "--endpoint", tc.endpoint, "--path-style", "--credentials-file", tc.creds, "--quiet")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("want one line, got %q", err)
			}
			for _, secret := range []string{badSecret, b.srv.SecretKey} {
				if strings.Contains(err.Error()+out+stderr, secret) {
					t.Fatalf("a secret reached the output: %v\n%s%s", err, out, stderr)
				}
			}
		})
	}
}

func errNotFoundS3() error { return zarr.ErrNotFound }

func TestARetriedCreateMultipartUploadLeavesNoOrphanedUpload(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		// Half the creates take effect on the server but lose their answer,
		// so the SDK's retry opens a second upload for the same key.
		proxy, err := faultproxy.New(b.srv.Endpoint, 3, faultproxy.Rule{Op: "CreateMultipartUpload", Fraction: 0.5, Faults: []faultproxy.Fault{faultproxy.DropCompleteResponse}})
		if err != nil {
			t.Fatal(err)
		}
		defer proxy.Close()
		spool := t.TempDir()
		a := newAcquisition("orphans", "uint16", []dimSpec{{8, 1, 8}, {2048, 256, 4}, {2048, 256, 4}})
		a.randomRaw(11, 8*2048*2048)
		mp := a.write(t, spool)
		args := append([]string{"convert", mp, "--dest", "s3://" + testBucket + "/orphans", "--part-size", "5MiB"}, b.flags(proxy.URL())...)
		if _, stderr, err := zspool(t, args...); err != nil {
			t.Fatalf("convert: %v\n%s", err, stderr)
		}
		if n := proxy.Stats()["CreateMultipartUpload"].Faulted[faultproxy.DropCompleteResponse]; n == 0 {
			t.Fatal("no create lost its answer: the test proved nothing")
		}
		ups, err := b.sink(t, "").PendingUploads(context.Background(), "orphans")
		if err != nil {
			t.Fatal(err)
		}
		if len(ups) != 0 {
			t.Fatalf("%d orphaned uploads left: %v", len(ups), ups)
		}
	})
}
