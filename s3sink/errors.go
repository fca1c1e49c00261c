package s3sink

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// httpStatus is the HTTP status of an SDK error, or 0.
func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// noSuchUpload says the server does not know the upload (any more).
func noSuchUpload(err error) bool {
	return httpStatus(err) == 404 || errorCode(err) == "NoSuchUpload"
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// explain turns an SDK error from a bucket-level request into one clear
// sentence. SDK errors carry request ids and codes, never credentials.
func explain(err error, bucket, endpoint string) error {
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("endpoint %s did not answer in time (unreachable?): %w", endpoint, err)
	case errors.As(err, &oe):
		return fmt.Errorf("endpoint %s is unreachable: %v", endpoint, oe)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("endpoint %s is unreachable: %v", endpoint, ne)
	}
	if strings.Contains(err.Error(), "get credentials") {
		return fmt.Errorf("no usable credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, or a credentials file (%v)", credCause(err))
	}
	switch code, status := errorCode(err), httpStatus(err); {
	case status == 404 || code == "NoSuchBucket" || code == "NotFound":
		return fmt.Errorf("bucket %q does not exist at %s", bucket, endpoint)
	case code == "InvalidAccessKeyId":
		return fmt.Errorf("the access key id is not known to %s: check the credentials", endpoint)
	case code == "SignatureDoesNotMatch":
		return fmt.Errorf("%s rejected the request signature: the secret key is wrong", endpoint)
	case status == 403:
		return fmt.Errorf("access to bucket %q denied (HTTP 403): the credentials are wrong or lack permission", bucket)
	case status == 301:
		return fmt.Errorf("bucket %q is in another region: set region", bucket)
	}
	return err
}

// credCause keeps the SDK's last words on the credential chain, which name
// the providers tried but never a secret.
func credCause(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "get credentials: "); i >= 0 {
		return msg[i+len("get credentials: "):]
	}
	return msg
}
