package s3test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"hash/crc32"
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

var crc32C = crc32.MakeTable(crc32.Castagnoli)

func crc32CBase64(data []byte) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crc32.Checksum(data, crc32C))
	return base64.StdEncoding.EncodeToString(b[:])
}

func TestCRCCheckValues(t *testing.T) {
	// The catalogue's check values (reveng; CRC-64/NVME's is also in the
	// NVMe command set specification) for "123456789".
	if got := crc64.Checksum([]byte("123456789"), crc64NVME); got != 0xae8b14860a799888 {
		t.Fatalf("CRC-64/NVME check = %#x", got)
	}
	if got := crc32.Checksum([]byte("123456789"), crc32C); got != 0xe3069283 {
		t.Fatalf("CRC-32C check = %#x", got)
	}
}

// crcAlgo is one of the whole-object checksums the S3 sink can ask for:
// its name as S3's headers spell it and its base64 value.
type crcAlgo struct {
	name string // lower case: x-amz-checksum-<name>
	of   func([]byte) string
}

var crcAlgos = []crcAlgo{{"crc64nvme", crc64NVMEBase64}, {"crc32c", crc32CBase64}}

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
	ChecksumCRC32C    string `xml:",omitempty"`
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

// upload sends the next part, with its checksum when algo is set.
func (m *multipart) upload(t *testing.T, data []byte, algo *crcAlgo) *Response {
	t.Helper()
	n := len(m.parts) + 1
	h := http.Header{}
	if algo != nil {
		h.Set("x-amz-checksum-"+algo.name, algo.of(data))
	}
	r := m.s.Request(t, "PUT", fmt.Sprintf("%s?partNumber=%d&uploadId=%s", m.target, n, url.QueryEscape(m.id)), h, data)
	if r.Status == 200 {
		p := completedPart{PartNumber: n, ETag: r.Header.Get("ETag")}
		switch {
		case algo == nil:
		case algo.name == "crc32c":
			p.ChecksumCRC32C = algo.of(data)
		default:
			p.ChecksumCRC64NVME = algo.of(data)
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
		if r := mp.upload(t, p, nil); r.Status != 200 {
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
		if r := mp2.upload(t, p, nil); r.Status != 200 {
			t.Fatalf("UploadPart: %s", r)
		}
	}
	got["complete if-none-match, existing key"] = obs(mp2.complete(t, inm), "")
	first := s.Request(t, "GET", "/behaviour/mp-inm", http.Header{"Range": {"bytes=0-0"}}, nil)
	got["complete if-none-match, first byte after"] = probe{Status: first.Status, Extra: string(first.Body)}
	// What is left of the refused upload: is it still open?
	lp := s.Request(t, "GET", "/behaviour/mp-inm?uploadId="+url.QueryEscape(mp2.id), nil, nil)
	got["list parts of refused upload"] = obs(lp, "")

	for _, a := range crcAlgos {
		checksumBehaviour(t, s, got, a)
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

// checksumBehaviour runs the checksum experiments with one algorithm,
// each named after it, into got.
func checksumBehaviour(t *testing.T, s *Server, got map[string]probe, a crcAlgo) {
	name := func(format string) string { return strings.ReplaceAll(format, "ALGO", a.name) }
	hdr := "x-amz-checksum-" + a.name
	path := "/behaviour/" + a.name

	// PutObject with the checksum.
	data := []byte("checksummed object\n")
	r := s.Request(t, "PUT", path+"-crc", http.Header{hdr: {a.of(data)}}, data)
	got[name("put ALGO, right")] = obs(r, "resp "+r.Header.Get(hdr))
	r = s.Request(t, "PUT", path+"-crc-bad", http.Header{hdr: {a.of([]byte("other"))}}, data)
	got[name("put ALGO, wrong")] = obs(r, "")
	r = s.Request(t, "HEAD", path+"-crc", http.Header{"x-amz-checksum-mode": {"ENABLED"}}, nil)
	got[name("head checksum-mode, put with ALGO")] = obs(r, checksumHeaders(r, a, a.of(data)))
	s.Request(t, "PUT", path+"-plain", nil, data)
	r = s.Request(t, "HEAD", path+"-plain", http.Header{"x-amz-checksum-mode": {"ENABLED"}}, nil)
	got[name("head checksum-mode, put without checksum, as ALGO")] = obs(r, checksumHeaders(r, a, a.of(data)))

	// Multipart with a FULL_OBJECT checksum.
	full := http.Header{"x-amz-checksum-algorithm": {strings.ToUpper(a.name)}, "x-amz-checksum-type": {"FULL_OBJECT"}}
	mp3, r := createMultipart(t, s, path+"-mp", full)
	got[name("create multipart ALGO full_object")] = obs(r, "resp algorithm "+r.Header.Get("x-amz-checksum-algorithm")+
		", type "+r.Header.Get("x-amz-checksum-type"))
	if mp3 == nil {
		return
	}
	parts := twoParts('c')
	for _, p := range parts {
		r = mp3.upload(t, p, &a)
		got[name("upload part with ALGO")] = obs(r, "resp "+r.Header.Get(hdr))
	}
	whole := a.of(bytes.Join(parts, nil))
	r = mp3.complete(t, http.Header{hdr: {whole}, "x-amz-checksum-type": {"FULL_OBJECT"}})
	res := completeResult(r)
	got[name("complete ALGO full_object, right")] = obs(r, fmt.Sprintf("body %s %s type %s, header %s %q type %q (want %s)",
		a.name, res.checksum(a), res.ChecksumType, a.name, r.Header.Get(hdr), r.Header.Get("x-amz-checksum-type"), whole))
	r = s.Request(t, "HEAD", path+"-mp", http.Header{"x-amz-checksum-mode": {"ENABLED"}}, nil)
	got[name("head checksum-mode, ALGO full_object multipart")] = obs(r, checksumHeaders(r, a, whole))

	// The same with a wrong full-object checksum at completion.
	mp4, _ := createMultipart(t, s, path+"-mp-bad", full)
	for _, p := range parts {
		mp4.upload(t, p, &a)
	}
	r = mp4.complete(t, http.Header{hdr: {a.of([]byte("x"))}, "x-amz-checksum-type": {"FULL_OBJECT"}})
	got[name("complete ALGO full_object, wrong")] = obs(r, "")
	got[name("complete ALGO full_object, wrong: object after")] = obs(s.Request(t, "HEAD", path+"-mp-bad", nil, nil), "")
	got[name("complete ALGO full_object, wrong: upload after")] = obs(s.Request(t, "GET", path+"-mp-bad?uploadId="+url.QueryEscape(mp4.id), nil, nil), "")
	mp5, _ := createMultipart(t, s, path+"-part-bad", full)
	r = s.Request(t, "PUT", path+"-part-bad?partNumber=1&uploadId="+url.QueryEscape(mp5.id),
		http.Header{hdr: {a.of([]byte("x"))}}, parts[1])
	got[name("upload part with wrong ALGO")] = obs(r, "")
}

type completeOutput struct {
	ETag, ChecksumCRC64NVME, ChecksumCRC32C, ChecksumType string
}

func (c completeOutput) checksum(a crcAlgo) string {
	if a.name == "crc32c" {
		return c.ChecksumCRC32C
	}
	return c.ChecksumCRC64NVME
}

func completeResult(r *Response) completeOutput {
	var out completeOutput
	xml.Unmarshal(r.Body, &out)
	return out
}

func checksumHeaders(r *Response, a crcAlgo, want string) string {
	v := r.Header.Get("x-amz-checksum-" + a.name)
	match := "absent"
	if v != "" {
		match = fmt.Sprintf("%s %s, matches: %v", a.name, v, v == want)
	}
	return match + ", type " + r.Header.Get("x-amz-checksum-type")
}

// TestBehaviour pins down how each server answers the requests the S3 sink
// depends on (conditional writes, CRC-64/NVME and CRC-32C checksums, multipart edge cases,
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
		"complete again (same upload id)":                        `404 NoSuchUpload [etag , first completion's "0ed1798e2fd49a47cb85e1a33c71870d-2"]`,
		"complete again with if-none-match":                      `412 PreconditionFailed [etag ]`,
		"complete again, object after":                           `200 [length 5243280, etag "0ed1798e2fd49a47cb85e1a33c71870d-2"]`,
		"complete crc32c full_object, right":                     `200 [body crc32c IzShWA== type , header crc32c "IzShWA==" type "FULL_OBJECT" (want IzShWA==)]`,
		"complete crc32c full_object, wrong":                     `400 XAmzContentChecksumMismatch`,
		"complete crc32c full_object, wrong: object after":       `404`,
		"complete crc32c full_object, wrong: upload after":       `200`,
		"complete crc64nvme full_object, right":                  `200 [body crc64nvme edGFTCILaqI= type , header crc64nvme "edGFTCILaqI=" type "FULL_OBJECT" (want edGFTCILaqI=)]`,
		"complete crc64nvme full_object, wrong":                  `400 XAmzContentChecksumMismatch`,
		"complete crc64nvme full_object, wrong: object after":    `404`,
		"complete crc64nvme full_object, wrong: upload after":    `200`,
		"complete if-none-match, existing key":                   `412 PreconditionFailed`,
		"complete if-none-match, first byte after":               `206 [a]`,
		"complete if-none-match, new key":                        `200`,
		"create multipart crc32c full_object":                    `200 [resp algorithm CRC32C, type FULL_OBJECT]`,
		"create multipart crc64nvme full_object":                 `200 [resp algorithm CRC64NVME, type FULL_OBJECT]`,
		"get, missing bucket":                                    `404 NoSuchBucket`,
		"get, missing key":                                       `404 NoSuchKey`,
		"get, wrong secret key":                                  `403 SignatureDoesNotMatch`,
		"head checksum-mode, crc32c full_object multipart":       `200 [crc32c IzShWA==, matches: true, type FULL_OBJECT]`,
		"head checksum-mode, crc64nvme full_object multipart":    `200 [crc64nvme edGFTCILaqI=, matches: true, type FULL_OBJECT]`,
		"head checksum-mode, put with crc32c":                    `200 [crc32c PzKcyQ==, matches: true, type FULL_OBJECT]`,
		"head checksum-mode, put with crc64nvme":                 `200 [crc64nvme GqkQpUuVLKs=, matches: true, type FULL_OBJECT]`,
		"head checksum-mode, put without checksum, as crc32c":    `200 [absent, type ]`,
		"head checksum-mode, put without checksum, as crc64nvme": `200 [absent, type ]`,
		"list parts of refused upload":                           `200`,
		"put crc32c, right":                                      `200 [resp PzKcyQ==]`,
		"put crc32c, wrong":                                      `400 XAmzContentChecksumMismatch`,
		"put crc64nvme, right":                                   `200 [resp GqkQpUuVLKs=]`,
		"put crc64nvme, wrong":                                   `400 XAmzContentChecksumMismatch`,
		"put if-none-match, content after":                       `200 [one]`,
		"put if-none-match, existing key":                        `412 PreconditionFailed`,
		"put if-none-match, new key":                             `200`,
		"put, missing bucket":                                    `404 NoSuchBucket`,
		"upload part with crc32c":                                `200 [resp GQPWnA==]`,
		"upload part with crc64nvme":                             `200 [resp jrVW1Qf5LCo=]`,
		"upload part with wrong crc32c":                          `400 XAmzContentChecksumMismatch`,
		"upload part with wrong crc64nvme":                       `400 XAmzContentChecksumMismatch`,
	},
	"versitygw": {
		"complete again (same upload id)":                        `200 [etag "0ed1798e2fd49a47cb85e1a33c71870d-2", first completion's "0ed1798e2fd49a47cb85e1a33c71870d-2"]`,
		"complete again with if-none-match":                      `200 [etag "0ed1798e2fd49a47cb85e1a33c71870d-2"]`,
		"complete again, object after":                           `200 [length 5243280, etag "0ed1798e2fd49a47cb85e1a33c71870d-2"]`,
		"complete crc32c full_object, right":                     `200 [body crc32c IzShWA== type FULL_OBJECT, header crc32c "" type "" (want IzShWA==)]`,
		"complete crc32c full_object, wrong":                     `400 BadDigest`,
		"complete crc32c full_object, wrong: object after":       `404`,
		"complete crc32c full_object, wrong: upload after":       `200`,
		"complete crc64nvme full_object, right":                  `200 [body crc64nvme edGFTCILaqI= type FULL_OBJECT, header crc64nvme "" type "" (want edGFTCILaqI=)]`,
		"complete crc64nvme full_object, wrong":                  `400 BadDigest`,
		"complete crc64nvme full_object, wrong: object after":    `404`,
		"complete crc64nvme full_object, wrong: upload after":    `200`,
		"complete if-none-match, existing key":                   `412 PreconditionFailed`,
		"complete if-none-match, first byte after":               `206 [a]`,
		"complete if-none-match, new key":                        `200`,
		"create multipart crc32c full_object":                    `200 [resp algorithm CRC32C, type FULL_OBJECT]`,
		"create multipart crc64nvme full_object":                 `200 [resp algorithm CRC64NVME, type FULL_OBJECT]`,
		"get, missing bucket":                                    `404 NoSuchBucket`,
		"get, missing key":                                       `404 NoSuchKey`,
		"get, wrong secret key":                                  `403 SignatureDoesNotMatch`,
		"head checksum-mode, crc32c full_object multipart":       `200 [crc32c IzShWA==, matches: true, type FULL_OBJECT]`,
		"head checksum-mode, crc64nvme full_object multipart":    `200 [crc64nvme edGFTCILaqI=, matches: true, type FULL_OBJECT]`,
		"head checksum-mode, put with crc32c":                    `200 [crc32c PzKcyQ==, matches: true, type FULL_OBJECT]`,
		"head checksum-mode, put with crc64nvme":                 `200 [crc64nvme GqkQpUuVLKs=, matches: true, type FULL_OBJECT]`,
		"head checksum-mode, put without checksum, as crc32c":    `200 [absent, type FULL_OBJECT]`,
		"head checksum-mode, put without checksum, as crc64nvme": `200 [crc64nvme GqkQpUuVLKs=, matches: true, type FULL_OBJECT]`,
		"list parts of refused upload":                           `200`,
		"put crc32c, right":                                      `200 [resp PzKcyQ==]`,
		"put crc32c, wrong":                                      `400 BadDigest`,
		"put crc64nvme, right":                                   `200 [resp GqkQpUuVLKs=]`,
		"put crc64nvme, wrong":                                   `400 BadDigest`,
		"put if-none-match, content after":                       `200 [one]`,
		"put if-none-match, existing key":                        `412 PreconditionFailed`,
		"put if-none-match, new key":                             `200`,
		"put, missing bucket":                                    `404 NoSuchBucket`,
		"upload part with crc32c":                                `200 [resp GQPWnA==]`,
		"upload part with crc64nvme":                             `200 [resp jrVW1Qf5LCo=]`,
		"upload part with wrong crc32c":                          `400 BadDigest`,
		"upload part with wrong crc64nvme":                       `400 BadDigest`,
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
