package s3sink_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.uber.org/zap"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/internal/s3test"
	"github.com/zspool/zspool/s3sink"
)

// BenchmarkUploadToMinIO compares, in one run against one local MinIO, the
// sink's streamed multipart uploads (a CRC per part and per object,
// HeadObject verification) with plain SDK PutObjects of the same bytes at
// the same concurrency. Run:
//
//	go test -run '^$' -bench UploadToMinIO -benchtime 3x ./s3sink
func BenchmarkUploadToMinIO(b *testing.B) {
	const objects, objectSize, write = 8, 32 << 20, 1 << 20
	srv, creds := bucketOn(b, s3test.StartMinIO, "bench")
	data := make([][]byte, objects)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = make([]byte, objectSize)
		for j := 0; j < objectSize; j += 8 {
			v := rng.Uint64()
			for k := range 8 {
				data[i][j+k] = byte(v >> (8 * k))
			}
		}
	}
	ctx := context.Background()

	b.Run("zspool-sink", func(b *testing.B) {
		sink, err := s3sink.New(ctx, zap.NewNop(), s3sink.Config{Destination: config.Destination{
			URL: "s3://bench/sink", Endpoint: srv.Endpoint, PathStyle: true, CredentialsFile: creds,
		}})
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(objects * objectSize)
		for n := 0; n < b.N; n++ {
			// As the assembler does: a layer's shards are written side by
			// side, chunk by chunk, then committed one after another.
			ws := make([]interface {
				Write([]byte) (int, error)
				Commit() error
			}, objects)
			for i := range ws {
				if ws[i], err = sink.Create(ctx, fmt.Sprintf("run%d/obj%d", n, i)); err != nil {
					b.Fatal(err)
				}
			}
			for off := 0; off < objectSize; off += write {
				for i, w := range ws {
					if _, err := w.Write(data[i][off : off+write]); err != nil {
						b.Fatal(err)
					}
				}
			}
			var wg sync.WaitGroup
			errs := make(chan error, objects)
			for _, w := range ws {
				wg.Add(1)
				go func() { defer wg.Done(); errs <- w.Commit() }()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})

	b.Run("plain-putobject", func(b *testing.B) {
		cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion("us-east-1"),
			awsconfig.WithSharedCredentialsFiles([]string{creds}))
		if err != nil {
			b.Fatal(err)
		}
		client := s3.NewFromConfig(cfg, func(o *s3.Options) {
			o.BaseEndpoint = aws.String(srv.Endpoint)
			o.UsePathStyle = true
		})
		b.SetBytes(objects * objectSize)
		for n := 0; n < b.N; n++ {
			var wg sync.WaitGroup
			errs := make(chan error, objects)
			for i := range objects {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := client.PutObject(ctx, &s3.PutObjectInput{
						Bucket: aws.String("bench"), Key: aws.String(fmt.Sprintf("plain/run%d/obj%d", n, i)),
						Body: bytes.NewReader(data[i]), ContentLength: aws.Int64(objectSize),
					})
					errs <- err
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
