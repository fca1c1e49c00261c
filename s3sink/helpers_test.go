package s3sink_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/zspool/zspool/internal/s3test"
)

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }

func writeCreds(path string, srv *s3test.Server) error {
	return writeFile(path, fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", srv.AccessKey, srv.SecretKey))
}

// bucketOn starts a server, makes bucket on it and writes a credentials
// file for it, with the SDK kept off instance metadata.
func bucketOn(tb testing.TB, start func(testing.TB) *s3test.Server, bucket string) (srv *s3test.Server, creds string) {
	tb.Helper()
	tb.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	srv = start(tb)
	srv.CreateBucket(tb, bucket)
	creds = filepath.Join(tb.TempDir(), "credentials")
	if err := writeCreds(creds, srv); err != nil {
		tb.Fatal(err)
	}
	return srv, creds
}
