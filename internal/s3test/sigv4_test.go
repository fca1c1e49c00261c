package s3test

import (
	"net/http"
	"testing"
	"time"
)

// TestSignV4S3GetObjectExample reproduces the "Example: GET Object" of AWS's
// "Signature Calculations for the Authorization Header: Transferring Payload
// in a Single Chunk" (https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html):
//
//	GET /test.txt, Host: examplebucket.s3.amazonaws.com, Range: bytes=0-9,
//	x-amz-content-sha256: e3b0c442...b855 (empty body), x-amz-date: 20130524T000000Z,
//	access key AKIAIOSFODNN7EXAMPLE, secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY,
//	scope 20130524/us-east-1/s3/aws4_request,
//	SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,
//	Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41
//
// (AWS writes the header without spaces after the commas; the separator is
// not part of the signature.)
func TestSignV4S3GetObjectExample(t *testing.T) {
	req, err := http.NewRequest("GET", "https://examplebucket.s3.amazonaws.com/test.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Range", "bytes=0-9")
	signV4(req, credentials{
		accessKey: "AKIAIOSFODNN7EXAMPLE",
		secretKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		region:    "us-east-1",
		service:   "s3",
	}, emptySHA256, time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC))

	want := "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, " +
		"Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
	if got := req.Header.Get("Authorization"); got != want {
		t.Errorf("Authorization:\n got %s\nwant %s", got, want)
	}
	if got := req.Header.Get("X-Amz-Content-Sha256"); got != emptySHA256 {
		t.Errorf("X-Amz-Content-Sha256 = %q, want %q", got, emptySHA256)
	}
	if got := req.Header.Get("X-Amz-Date"); got != "20130524T000000Z" {
		t.Errorf("X-Amz-Date = %q", got)
	}
}

// TestSignV4TestSuite checks two cases of AWS's SigV4 test suite
// (https://docs.aws.amazon.com/general/latest/gr/signature-v4-test-suite.html,
// aws-sig-v4-test-suite/get-vanilla and get-vanilla-query-order-key-case):
// access key AKIDEXAMPLE, secret wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY,
// region us-east-1, service "service", X-Amz-Date 20150830T123600Z,
// Host example.amazonaws.com, empty body. Service "service" also shows that
// X-Amz-Content-Sha256 is added (and signed) only for S3.
func TestSignV4TestSuite(t *testing.T) {
	for _, tc := range []struct {
		name, url, signature string
	}{
		{"get-vanilla", "https://example.amazonaws.com/",
			"5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
		{"get-vanilla-query-order-key-case", "https://example.amazonaws.com/?Param2=value2&Param1=value1",
			"b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			signV4(req, credentials{
				accessKey: "AKIDEXAMPLE",
				secretKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
				region:    "us-east-1",
				service:   "service",
			}, emptySHA256, time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC))
			want := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, " +
				"SignedHeaders=host;x-amz-date, Signature=" + tc.signature
			if got := req.Header.Get("Authorization"); got != want {
				t.Errorf("Authorization:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestCanonicalQuery(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "",
		"uploads":                       "uploads=",
		"uploadId=a%2Fb+c&partNumber=2": "partNumber=2&uploadId=a%2Fb%20c",
		"a=2&a-b=1&a=1":                 "a=1&a=2&a-b=1",
		"list-type=2&prefix=x%7Ey":      "list-type=2&prefix=x~y",
	} {
		if got := canonicalQuery(in); got != want {
			t.Errorf("canonicalQuery(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAWSEscape(t *testing.T) {
	for _, tc := range []struct {
		in          string
		encodeSlash bool
		want        string
	}{
		{"/bucket/a b/c+d~e", false, "/bucket/a%20b/c%2Bd~e"},
		{"a/b=c", true, "a%2Fb%3Dc"},
		{"ü", false, "%C3%BC"},
	} {
		if got := awsEscape(tc.in, tc.encodeSlash); got != tc.want {
			t.Errorf("awsEscape(%q, %v) = %q, want %q", tc.in, tc.encodeSlash, got, tc.want)
		}
	}
}
