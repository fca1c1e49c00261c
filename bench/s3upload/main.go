// Command s3upload uploads a directory tree to an S3 bucket with the AWS
// SDK's transfer manager (feature/s3/manager), several files at once: the
// plain upload bench/path-host.sh holds zspool's S3 path against. It
// prints the bytes, the seconds and the rate.
//
//	s3upload -endpoint http://127.0.0.1:9000 -dir DATASET -dest s3://bucket/prefix
//
// Credentials come from the environment (AWS_ACCESS_KEY_ID, …).
package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func main() {
	endpoint := flag.String("endpoint", "", "S3 endpoint URL")
	dir := flag.String("dir", "", "the directory to upload")
	dest := flag.String("dest", "", "s3://bucket/prefix")
	files := flag.Int("files", 8, "files uploaded at once")
	parts := flag.Int("parts", 5, "parts in flight per file (the manager's Concurrency)")
	partSize := flag.Int64("part-size", 16<<20, "part size")
	flag.Parse()
	if err := run(*endpoint, *dir, *dest, *files, *parts, *partSize); err != nil {
		fmt.Fprintln(os.Stderr, "s3upload:", err)
		os.Exit(1)
	}
}

func run(endpoint, dir, dest string, files, parts int, partSize int64) error {
	rest, ok := strings.CutPrefix(dest, "s3://")
	if !ok || dir == "" {
		return fmt.Errorf("want -dir DIR -dest s3://bucket/prefix")
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	ctx := context.Background()
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion("us-east-1"))
	if err != nil {
		return err
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = true
	})
	up := manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = partSize
		u.Concurrency = parts
	})
	var paths []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			paths = append(paths, p)
		}
		return err
	}); err != nil {
		return err
	}
	start := time.Now()
	var total atomic.Int64
	work := make(chan string)
	errs := make(chan error, files)
	var wg sync.WaitGroup
	for range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				if err := upload(ctx, up, bucket, prefix, dir, p, &total); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	go func() {
		defer close(work)
		for _, p := range paths {
			work <- p
		}
	}()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("s3upload: %d objects, %.3f GiB in %.3f s, %.3f GiB/s (%d files at once, %d parts each)\n",
		len(paths), float64(total.Load())/(1<<30), secs, float64(total.Load())/(1<<30)/secs, files, parts)
	return nil
}

func upload(ctx context.Context, up *manager.Uploader, bucket, prefix, dir, p string, total *atomic.Int64) error {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return err
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	key := path.Join(prefix, filepath.ToSlash(rel))
	if _, err := up.Upload(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: f}); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	total.Add(fi.Size())
	return nil
}
