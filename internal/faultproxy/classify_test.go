package faultproxy

import (
	"net/http/httptest"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct{ method, target, want string }{
		{"PUT", "/b/k?partNumber=3&uploadId=u1", "UploadPart"},
		{"PUT", "/b/dir/k%2Fx?uploadId=u1&partNumber=1&x-id=UploadPart", "UploadPart"},
		{"PUT", "/b/k", "PutObject"},
		{"PUT", "/b/k?partNumber=3", "PutObject"},
		{"PUT", "/b/dir/sub/k", "PutObject"},
		{"PUT", "/b", "CreateBucket"},
		{"PUT", "/b/", "CreateBucket"},
		{"PUT", "/b?versioning", "Unknown"},
		{"POST", "/b/k?uploads", "CreateMultipartUpload"},
		{"POST", "/b/k?uploads=&x-id=CreateMultipartUpload", "CreateMultipartUpload"},
		{"POST", "/b/k?uploadId=u1", "CompleteMultipartUpload"},
		{"POST", "/b?delete", "DeleteObjects"},
		{"POST", "/b/k", "Unknown"},
		{"DELETE", "/b/k?uploadId=u1", "AbortMultipartUpload"},
		{"DELETE", "/b/k", "DeleteObject"},
		{"DELETE", "/b", "DeleteBucket"},
		{"HEAD", "/b/k", "HeadObject"},
		{"HEAD", "/b", "HeadBucket"},
		{"HEAD", "/b/", "HeadBucket"},
		{"GET", "/b?uploads", "ListMultipartUploads"},
		{"GET", "/b?uploads&prefix=k", "ListMultipartUploads"},
		{"GET", "/b/k?uploadId=u1", "ListParts"},
		{"GET", "/b/k", "GetObject"},
		{"GET", "/b/k?partNumber=1", "GetObject"},
		{"GET", "/b", "ListObjects"},
		{"GET", "/b?list-type=2&prefix=x", "ListObjects"},
		{"GET", "/b?location", "GetBucketLocation"},
		{"GET", "/", "ListBuckets"},
		{"PUT", "/", "Unknown"},
		{"PATCH", "/b/k", "Unknown"},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		if got := Classify(r); got != tc.want {
			t.Errorf("%s %s = %s, want %s", tc.method, tc.target, got, tc.want)
		}
	}
}
