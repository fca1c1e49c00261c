package faultproxy

import (
	"net/http"
	"strings"
)

// ops are the operation names Classify reports; a Rule.Op must be one of
// them or "*" (any operation). ListObjects covers v1 and v2.
var ops = strings.Fields(`* CreateBucket DeleteBucket HeadBucket ListBuckets
	ListObjects GetBucketLocation PutObject GetObject HeadObject DeleteObject
	DeleteObjects CreateMultipartUpload UploadPart CompleteMultipartUpload
	AbortMultipartUpload ListMultipartUploads ListParts Unknown`)

// Classify names the S3 operation of a path-style request (/bucket/key…)
// from its method, path and query parameters. Requests it does not
// recognise are Unknown.
func Classify(r *http.Request) string {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q, obj := r.URL.Query(), key != ""
	switch m := r.Method; {
	case bucket == "":
		if m == http.MethodGet {
			return "ListBuckets"
		}
	case m == http.MethodPut && obj && q.Has("partNumber") && q.Has("uploadId"):
		return "UploadPart"
	case m == http.MethodPut && obj:
		return "PutObject"
	case m == http.MethodPut && len(q) == 0:
		return "CreateBucket"
	case m == http.MethodPost && obj && q.Has("uploads"):
		return "CreateMultipartUpload"
	case m == http.MethodPost && obj && q.Has("uploadId"):
		return "CompleteMultipartUpload"
	case m == http.MethodPost && !obj && q.Has("delete"):
		return "DeleteObjects"
	case m == http.MethodDelete && obj && q.Has("uploadId"):
		return "AbortMultipartUpload"
	case m == http.MethodDelete && obj:
		return "DeleteObject"
	case m == http.MethodDelete && len(q) == 0:
		return "DeleteBucket"
	case m == http.MethodHead && obj:
		return "HeadObject"
	case m == http.MethodHead:
		return "HeadBucket"
	case m == http.MethodGet && q.Has("uploads"):
		return "ListMultipartUploads"
	case m == http.MethodGet && obj && q.Has("uploadId"):
		return "ListParts"
	case m == http.MethodGet && obj:
		return "GetObject"
	case m == http.MethodGet && q.Has("location"):
		return "GetBucketLocation"
	case m == http.MethodGet:
		return "ListObjects"
	}
	return "Unknown"
}
