package s3sink_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.uber.org/zap"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/internal/s3test"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/s3sink"
)

// sealShard writes n bytes to key through the sink and seals it.
func sealShard(t *testing.T, sink *s3sink.Sink, key string, data []byte) (pipeline.ObjectWriter, pipeline.SealedObject, bool) {
	t.Helper()
	w, err := sink.Create(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); off += 1 << 20 {
		if _, err := w.Write(data[off:min(off+1<<20, len(data))]); err != nil {
			t.Fatal(err)
		}
	}
	obj, ok, err := w.(pipeline.Sealer).Seal()
	if err != nil {
		t.Fatalf("seal %s: %v", key, err)
	}
	return w, obj, ok
}

func TestSealedUploadsFinishFromTheirRecordAlone(t *testing.T) {
	for _, srv := range []struct {
		name  string
		start func(testing.TB) *s3test.Server
	}{{"minio", s3test.StartMinIO}, {"versitygw", s3test.StartVersityGW}} {
		for _, sum := range config.ChecksumChoices {
			t.Run(srv.name+"/"+sum, func(t *testing.T) { testSealedUploadsFinish(t, srv.start, sum) })
		}
	}
}

// newSealSink is a sink on bucket seal of s with 5 MiB parts and the named
// object checksum.
func newSealSink(t *testing.T, s *s3test.Server, creds, sum string) *s3sink.Sink {
	t.Helper()
	sink, err := s3sink.New(context.Background(), zap.NewNop(), s3sink.Config{Destination: config.Destination{
		URL: "s3://seal/ds", Endpoint: s.Endpoint, PathStyle: true, CredentialsFile: creds, PartSize: config.MinPartSize,
		Checksum: sum,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return sink
}

func testSealedUploadsFinish(t *testing.T, start func(testing.TB) *s3test.Server, sum string) {
	s, creds := bucketOn(t, start, "seal")
	ctx := context.Background()
	sink := newSealSink(t, s, creds, sum)
	data := make([]byte, 12<<20+123)
	for i := range data {
		data[i] = byte(i*7 + i>>13)
	}
	get := func(key string) []byte {
		cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithSharedCredentialsFiles([]string{creds}), awsconfig.WithRegion("us-east-1"))
		if err != nil {
			t.Fatal(err)
		}
		c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = aws.String(s.Endpoint); o.UsePathStyle = true })
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("seal"), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	// A writer that sealed and then died: its record finishes it.
	_, obj, ok := sealShard(t, sink, "crashed", data)
	if !ok || obj.Key != "ds/crashed" || obj.UploadID == "" || obj.Size != int64(len(data)) || !strings.HasPrefix(obj.Checksum, sum+":") {
		t.Fatalf("seal = %+v, %v; want the whole upload described, its checksum named %s", obj, ok, sum)
	}
	if err := sink.Finish(ctx, obj); err != nil {
		t.Fatalf("finish: %v", err)
	}
	if !bytes.Equal(get("ds/crashed"), data) {
		t.Fatal("the finished object differs from what was written")
	}
	// Finishing twice (a crash after the complete) is no error.
	if err := sink.Finish(ctx, obj); err != nil {
		t.Fatalf("second finish: %v", err)
	}

	// A writer that sealed and committed: Finish only checks.
	w, obj, _ := sealShard(t, sink, "committed", data[:6<<20])
	if err := w.Commit(); err != nil {
		t.Fatalf("commit after seal: %v", err)
	}
	if err := sink.Finish(ctx, obj); err != nil {
		t.Fatalf("finish of a committed object: %v", err)
	}
	if !bytes.Equal(get("ds/committed"), data[:6<<20]) {
		t.Fatal("the committed object differs from what was written")
	}

	// An upload aborted behind the record's back cannot be finished.
	_, obj, _ = sealShard(t, sink, "aborted", data)
	if err := sink.AbortUpload(ctx, obj.Key, obj.UploadID); err != nil {
		t.Fatal(err)
	}
	if err := sink.Finish(ctx, obj); !errors.Is(err, pipeline.ErrUnfinishable) {
		t.Fatalf("finish of an aborted upload: %v, want ErrUnfinishable", err)
	}

	// A shard smaller than a part has no upload to seal.
	w, _, ok = sealShard(t, sink, "small", data[:1000])
	if ok {
		t.Fatal("a shard smaller than a part was sealed")
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(get("ds/small"), data[:1000]) {
		t.Fatal("the small object differs from what was written")
	}

	// A record sealed under one checksum is finished under the other
	// (a daemon restarted with a new setting): the record says how.
	other := config.ChecksumChoices[0]
	if other == sum {
		other = config.ChecksumChoices[1]
	}
	_, obj, _ = sealShard(t, sink, "resumed", data)
	if err := newSealSink(t, s, creds, other).Finish(ctx, obj); err != nil {
		t.Fatalf("finish under checksum %s of a record sealed under %s: %v", other, sum, err)
	}
	if !bytes.Equal(get("ds/resumed"), data) {
		t.Fatal("the object finished under the other setting differs from what was written")
	}
	if sum == "crc64nvme" {
		// A record from before the setting existed names no
		// checksum: it was CRC64NVME, the only one then.
		_, obj, _ = sealShard(t, sink, "legacy", data)
		obj.Checksum = strings.TrimPrefix(obj.Checksum, "crc64nvme:")
		if err := newSealSink(t, s, creds, "crc32c").Finish(ctx, obj); err != nil {
			t.Fatalf("finish of a record without a checksum name: %v", err)
		}
	}
}
