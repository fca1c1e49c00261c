package s3test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"hash/crc64"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// crc64NVME is the CRC-64/NVME table (reflected polynomial
// 0x9a6c9329ac4bc9b5); hash/crc64's pre- and post-inversion match the
// algorithm's init and xorout of all ones.
var crc64NVME = crc64.MakeTable(0x9a6c9329ac4bc9b5)

func crc64NVMEBase64(data []byte) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], crc64.Checksum(data, crc64NVME))
	return base64.StdEncoding.EncodeToString(b[:])
}

func TestCRC64NVME(t *testing.T) {
	// The CRC-64/NVME check value (CRC catalogue; also in the NVMe command
	// set specification): "123456789" -> 0xae8b14860a799888.
	if got := crc64.Checksum([]byte("123456789"), crc64NVME); got != 0xae8b14860a799888 {
		t.Fatalf("CRC-64/NVME check = %#x", got)
	}
}

// probe records one observation: what a request returned.
type probe struct {
	Status int
	Code   string // S3 error code, "" for success
	Extra  string // a header value or note the check looks at
}

func (p probe) String() string {
	s := fmt.Sprint(p.Status)
	if p.Code != "" {
		s += " " + p.Code
	}
	if p.Extra != "" {
		s += " [" + p.Extra + "]"
	}
	return s
}

func obs(r *Response, extra string) probe {
	return probe{Status: r.Status, Code: r.ErrorCode(), Extra: extra}
}

type completedPart struct {
	PartNumber        int
	ETag              string
	ChecksumCRC64NVME string `xml:",omitempty"`
}

type multipart struct {
	s      *Server
	target string // "/bucket/key"
	id     string
	parts  []completedPart
}

func createMultipart(t *testing.T, s *Server, target string, header http.Header) (*multipart, *Response) {
	t.Helper()
	r := s.Request(t, "POST", target+"?uploads", header, nil)
	if r.Status != 200 {
		return nil, r
	}
	var out struct{ UploadId string }
	if err := xml.Unmarshal(r.Body, &out); err != nil || out.UploadId == "" {
		t.Fatalf("CreateMultipartUpload: %v in %s", err, r.Body)
	}
	return &multipart{s: s, target: target, id: out.UploadId}, r
}

func (m *multipart) upload(t *testing.T, data []byte, withChecksum bool) *Response {
	t.Helper()
	n := len(m.parts) + 1
	h := http.Header{}
	if withChecksum {
		h.Set("x-amz-checksum-crc64nvme", crc64NVMEBase64(data))
	}
	r := m.s.Request(t, "PUT", fmt.Sprintf("%s?partNumber=%d&uploadId=%s", m.target, n, url.QueryEscape(m.id)), h, data)
	if r.Status == 200 {
		p := completedPart{PartNumber: n, ETag: r.Header.Get("ETag")}
		if withChecksum {
			p.ChecksumCRC64NVME = crc64NVMEBase64(data)
		}
		m.parts = append(m.parts, p)
	}
	return r
}

func (m *multipart) complete(t *testing.T, header http.Header) *Response {
	t.Helper()
	body, err := xml.Marshal(struct {
		XMLName xml.Name        `xml:"CompleteMultipartUpload"`
		Parts   []completedPart `xml:"Part"`
	}{Parts: m.parts})
	if err != nil {
		t.Fatal(err)
	}
	return m.s.Request(t, "POST", m.target+"?uploadId="+url.QueryEscape(m.id), header, body)
}

// twoParts is a 5 MiB part (the minimum for all but the last) and a small
// last part.
func twoParts(seed byte) [][]byte {
	a := bytes.Repeat([]byte{seed}, 5<<20)
	b := []byte(strings.Repeat("tail", 100))
	return [][]byte{a, b}
}

// behaviour runs the experiments against one server and returns what each
// returned, by name.
func behaviour(t *testing.T, s *Server) map[string]probe {
	const bucket = "behaviour"
	s.CreateBucket(t, bucket)
	got := map[string]probe{}
	inm := http.Header{"If-None-Match": {"*"}}

	// PutObject with If-None-Match: *.
	got["put if-none-match, new key"] = obs(s.Request(t, "PUT", "/behaviour/inm", inm, []byte("one")), "")
	got["put if-none-match, existing key"] = obs(s.Request(t, "PUT", "/behaviour/inm", inm, []byte("two")), "")
	body := s.Request(t, "GET", "/behaviour/inm", nil, nil).Body
	got["put if-none-match, content after"] = probe{Status: 200, Extra: string(body)}

	// CompleteMultipartUpload with If-None-Match: *.
	mp, r := createMultipart(t, s, "/behaviour/mp-inm", nil)
	if mp == nil {
		t.Fatalf("CreateMultipartUpload: %s", r)
	}
	for _, p := range twoParts('a') {
		if r := mp.upload(t, p, false); r.Status != 200 {
			t.Fatalf("UploadPart: %s", r)
		}
	}
	done := mp.complete(t, inm)
	got["complete if-none-match, new key"] = obs(done, "")
	// The same upload completed again, after success.
	again := mp.complete(t, nil)
	got["complete again (same upload id)"] = obs(again, fmt.Sprintf("etag %s, first completion's %s",
		completeResult(again).ETag, completeResult(done).ETag))
	// A retry of a conditional completion whose response was lost.
	retry := mp.complete(t, inm)
	got["complete again with if-none-match"] = obs(retry, "etag "+completeResult(retry).ETag)
	r = s.Request(t, "HEAD", "/behaviour/mp-inm", nil, nil)
	got["complete again, object after"] = obs(r, "length "+r.Header.Get("Content-Length")+", etag "+r.Header.Get("ETag"))
	mp2, _ := createMultipart(t, s, "/behaviour/mp-inm", nil)
	for _, p := range twoParts('b') {
		if r := mp2.upload(t, p, false); r.Status != 200 {
			t.Fatalf("UploadPart: %s", r)
		}
	}
	got["complete if-none-match, existing key"] = obs(mp2.complete(t, inm), "")
	first := s.Request(t, "GET", "/behaviour/mp-inm", http.Header{"Range": {"bytes=0-0"}}, nil)
	got["complete if-none-match, first byte after"] = probe{Status: first.Status, Extra: string(first.Body)}
	// What is left of the refused upload: is it still open?
	lp := s.Request(t, "GET", "/behaviour/mp-inm?uploadId="+url.QueryEscape(mp2.id), nil, nil)
	got["list parts of refused upload"] = obs(lp, "")

	// PutObject with x-amz-checksum-crc64nvme.
	data := []byte("checksummed object\n")
	r = s.Request(t, "PUT", "/behaviour/crc", http.Header{"x-amz-checksum-crc64nvme": {crc64NVMEBase64(data)}}, data)
	got["put crc64nvme, right"] = obs(r, "resp "+r.Header.Get("x-amz-checksum-crc64nvme"))
	r = s.Request(t, "PUT", "/behaviour/crc-bad", http.Header{"x-amz-checksum-crc64nvme": {crc64NVMEBase64([]byte("other"))}}, data)
	got["put crc64nvme, wrong"] = obs(r, "")
	r = s.Request(t, "HEAD", "/behaviour/crc", http.Header{"x-amz-checksum-mode": {"ENABLED"}}, nil)
	got["head checksum-mode, put with crc64nvme"] = obs(r, checksumHeaders(r, crc64NVMEBase64(data)))
	s.Request(t, "PUT", "/behaviour/plain", nil, data)
	r = s.Request(t, "HEAD", "/behaviour/plain", http.Header{"x-amz-checksum-mode": {"ENABLED"}}, nil)
	got["head checksum-mode, put without checksum"] = obs(r, checksumHeaders(r, crc64NVMEBase64(data)))

	// Multipart with a FULL_OBJECT CRC64NVME checksum.
	full := http.Header{"x-amz-checksum-algorithm": {"CRC64NVME"}, "x-amz-checksum-type": {"FULL_OBJECT"}}
	mp3, r := createMultipart(t, s, "/behaviour/mp-crc", full)
	got["create multipart crc64nvme full_object"] = obs(r, "resp algorithm "+r.Header.Get("x-amz-checksum-algorithm")+
		", type "+r.Header.Get("x-amz-checksum-type"))
	if mp3 != nil {
		parts := twoParts('c')
		for _, p := range parts {
			r = mp3.upload(t, p, true)
			got["upload part with crc64nvme"] = obs(r, "resp "+r.Header.Get("x-amz-checksum-crc64nvme"))
		}
		whole := crc64NVMEBase64(bytes.Join(parts, nil))
		r = mp3.complete(t, http.Header{"x-amz-checksum-crc64nvme": {whole}, "x-amz-checksum-type": {"FULL_OBJECT"}})
		res := completeResult(r)
		got["complete crc64nvme full_object, right"] = obs(r, fmt.Sprintf("body crc64nvme %s type %s, header crc64nvme %q type %q (want %s)",
			res.ChecksumCRC64NVME, res.ChecksumType, r.Header.Get("x-amz-checksum-crc64nvme"), r.Header.Get("x-amz-checksum-type"), whole))
		r = s.Request(t, "HEAD", "/behaviour/mp-crc", http.Header{"x-amz-checksum-mode": {"ENABLED"}}, nil)
		got["head checksum-mode, full_object multipart"] = obs(r, checksumHeaders(r, whole))

		// The same with a wrong full-object checksum at completion.
		mp4, _ := createMultipart(t, s, "/behaviour/mp-crc-bad", full)
		for _, p := range parts {
			mp4.upload(t, p, true)
		}
		r = mp4.complete(t, http.Header{"x-amz-checksum-crc64nvme": {crc64NVMEBase64([]byte("x"))}, "x-amz-checksum-type": {"FULL_OBJECT"}})
		got["complete crc64nvme full_object, wrong"] = obs(r, "")
		got["complete crc64nvme full_object, wrong: object after"] = obs(s.Request(t, "HEAD", "/behaviour/mp-crc-bad", nil, nil), "")
		got["complete crc64nvme full_object, wrong: upload after"] = obs(s.Request(t, "GET", "/behaviour/mp-crc-bad?uploadId="+url.QueryEscape(mp4.id), nil, nil), "")
		mp5, _ := createMultipart(t, s, "/behaviour/mp-part-bad", full)
		r = s.Request(t, "PUT", "/behaviour/mp-part-bad?partNumber=1&uploadId="+url.QueryEscape(mp5.id),
			http.Header{"x-amz-checksum-crc64nvme": {crc64NVMEBase64([]byte("x"))}}, parts[1])
		got["upload part with wrong crc64nvme"] = obs(r, "")
	}

	// Errors.
	got["get, missing bucket"] = obs(s.Request(t, "GET", "/no-such-bucket/key", nil, nil), "")
	got["put, missing bucket"] = obs(s.Request(t, "PUT", "/no-such-bucket/key", nil, []byte("x")), "")
	got["get, missing key"] = obs(s.Request(t, "GET", "/behaviour/no-such-key", nil, nil), "")
	r, err := s.DoWithSecret(t.Context(), s.SecretKey+"x", "GET", "/behaviour/inm", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got["get, wrong secret key"] = obs(r, "")
	return got
}

type completeOutput struct {
	ETag, ChecksumCRC64NVME, ChecksumType string
}

func completeResult(r *Response) completeOutput {
	var out completeOutput
	xml.Unmarshal(r.Body, &out)
	return out
}

func checksumHeaders(r *Response, want string) string {
	v := r.Header.Get("x-amz-checksum-crc64nvme")
	match := "absent"
	if v != "" {
		match = fmt.Sprintf("crc64nvme %s, matches: %v", v, v == want)
	}
	return match + ", type " + r.Header.Get("x-amz-checksum-type")
}

// TestBehaviour pins down how each server answers the requests the S3 sink
// depends on (conditional writes, CRC64NVME checksums, multipart edge cases,
// error codes), so that a server upgrade that changes any of it fails here
// first. Run with -v to see the table.
func TestBehaviour(t *testing.T) {
	for _, st := range starters {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			got := behaviour(t, st.start(t))
			want := wantBehaviour[st.name]
			var b strings.Builder
			for _, k := range sortedKeys(got) {
				fmt.Fprintf(&b, "  %-58s %s\n", k, got[k])
				if w, ok := want[k]; !ok {
					t.Errorf("%s: no expectation recorded (got %s)", k, got[k])
				} else if got[k].String() != w {
					t.Errorf("%s:\n got %s\nwant %s", k, got[k], w)
				}
			}
			for k := range want {
				if _, ok := got[k]; !ok {
					t.Errorf("%s: expected but not observed", k)
				}
			}
			t.Logf("%s %s:\n%s", st.name, map[string]string{"minio": MinIOVersion, "versitygw": VersityGWVersion}[st.name], b.String())
		})
	}
}

// wantBehaviour is what the pinned versions were observed to do.
var wantBehaviour = map[string]map[string]string{
	"minio": {
		"put if-none-match, new key":                          `200`,
		"put if-none-match, existing key":                     `412 PreconditionFailed`,
		"put if-none-match, content after":                    `200 [one]`,
		"complete if-none-match, new key":                     `200`,
		"complete if-none-match, existing key":                `412 PreconditionFailed`,
		"complete if-none-match, first byte after":            `206 [a]`,
		"list parts of refused upload":                        `200`,
		"complete again (same upload id)":                     `404 NoSuchUpload [etag , first completion's "0ed1798e2fd49a47cb85e1a33c71870d-2"]`,
		"complete again with if-none-match":                   `412 PreconditionFailed [etag ]`,
		"complete again, object after":                        `200 [length 5243280, etag "0ed1798e2fd49a47cb85e1a33c71870d-2"]`,
		"put crc64nvme, right":                                `200 [resp GqkQpUuVLKs=]`,
		"put crc64nvme, wrong":                                `400 XAmzContentChecksumMismatch`,
		"head checksum-mode, put with crc64nvme":              `200 [crc64nvme GqkQpUuVLKs=, matches: true, type FULL_OBJECT]`,
		"head checksum-mode, put without checksum":            `200 [absent, type ]`,
		"create multipart crc64nvme full_object":              `200 [resp algorithm CRC64NVME, type FULL_OBJECT]`,
		"upload part with crc64nvme":                          `200 [resp jrVW1Qf5LCo=]`,
		"upload part with wrong crc64nvme":                    `400 XAmzContentChecksumMismatch`,
		"complete crc64nvme full_object, right":               `200 [body crc64nvme edGFTCILaqI= type , header crc64nvme "edGFTCILaqI=" type "FULL_OBJECT" (want edGFTCILaqI=)]`,
		"complete crc64nvme full_object, wrong":               `400 XAmzContentChecksumMismatch`,
		"complete crc64nvme full_object, wrong: object after": `404`,
		"complete crc64nvme full_object, wrong: upload after": `200`,
		"head checksum-mode, full_object multipart":           `200 [crc64nvme edGFTCILaqI=, matches: true, type FULL_OBJECT]`,
		"get, missing bucket":                                 `404 NoSuchBucket`,
		"put, missing bucket":                                 `404 NoSuchBucket`,
		"get, missing key":                                    `404 NoSuchKey`,
		"get, wrong secret key":                               `403 SignatureDoesNotMatch`,
	},
	"versitygw": {
		"put if-none-match, new key":                          `200`,
		"put if-none-match, existing key":                     `412 PreconditionFailed`,
		"put if-none-match, content after":                    `200 [one]`,
		"complete if-none-match, new key":                     `200`,
		"complete if-none-match, existing key":                `412 PreconditionFailed`,
		"complete if-none-match, first byte after":            `206 [a]`,
		"list parts of refused upload":                        `200`,
		"complete again (same upload id)":                     `200 [etag "0ed1798e2fd49a47cb85e1a33c71870d-2", first completion's "0ed1798e2fd49a47cb85e1a33c71870d-2"]`,
		"complete again with if-none-match":                   `200 [etag "0ed1798e2fd49a47cb85e1a33c71870d-2"]`,
		"complete again, object after":                        `200 [length 5243280, etag "0ed1798e2fd49a47cb85e1a33c71870d-2"]`,
		"put crc64nvme, right":                                `200 [resp GqkQpUuVLKs=]`,
		"put crc64nvme, wrong":                                `400 BadDigest`,
		"head checksum-mode, put with crc64nvme":              `200 [crc64nvme GqkQpUuVLKs=, matches: true, type FULL_OBJECT]`,
		"head checksum-mode, put without checksum":            `200 [crc64nvme GqkQpUuVLKs=, matches: true, type FULL_OBJECT]`,
		"create multipart crc64nvme full_object":              `200 [resp algorithm CRC64NVME, type FULL_OBJECT]`,
		"upload part with crc64nvme":                          `200 [resp jrVW1Qf5LCo=]`,
		"upload part with wrong crc64nvme":                    `400 BadDigest`,
		"complete crc64nvme full_object, right":               `200 [body crc64nvme edGFTCILaqI= type FULL_OBJECT, header crc64nvme "" type "" (want edGFTCILaqI=)]`,
		"complete crc64nvme full_object, wrong":               `400 BadDigest`,
		"complete crc64nvme full_object, wrong: object after": `404`,
		"complete crc64nvme full_object, wrong: upload after": `200`,
		"head checksum-mode, full_object multipart":           `200 [crc64nvme edGFTCILaqI=, matches: true, type FULL_OBJECT]`,
		"get, missing bucket":                                 `404 NoSuchBucket`,
		"put, missing bucket":                                 `404 NoSuchBucket`,
		"get, missing key":                                    `404 NoSuchKey`,
		"get, wrong secret key":                               `403 SignatureDoesNotMatch`,
	},
}

func sortedKeys(m map[string]probe) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
