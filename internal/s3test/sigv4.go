package s3test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// This file is a deliberately small AWS Signature Version 4 signer
// (header-based, single chunk), so that the harness can talk to the servers
// it starts without depending on an SDK. It is checked against AWS's
// published example vectors in sigv4_test.go.

const (
	sigV4Algorithm = "AWS4-HMAC-SHA256"
	amzDateFormat  = "20060102T150405Z"
	// emptySHA256 is the hex SHA-256 of the empty string.
	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// credentials is what signV4 needs to sign for one principal and scope.
type credentials struct {
	accessKey, secretKey, region, service string
}

// signV4 signs req in place: it sets X-Amz-Date, X-Amz-Content-Sha256 (for
// service "s3", which requires it) and Authorization. payloadHash is the
// lowercase hex SHA-256 of the body (or "UNSIGNED-PAYLOAD").
//
// Signed headers are Host plus every header already in req.Header; headers
// that net/http adds later (User-Agent, Accept-Encoding, Content-Length) are
// not signed, which SigV4 allows. The path is sent in the canonical,
// AWS-escaped form that is signed.
func signV4(req *http.Request, c credentials, payloadHash string, now time.Time) {
	amzDate := now.UTC().Format(amzDateFormat)
	req.Header.Set("X-Amz-Date", amzDate)
	if c.service == "s3" {
		req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	}
	req.Header.Del("Authorization")

	canonicalURI := awsEscape(req.URL.Path, false)
	if canonicalURI == "" {
		canonicalURI = "/"
	}
	// Send exactly the path that was signed (url.URL keeps RawPath only if
	// it is a valid encoding of Path, which an AWS-escaped form always is).
	req.URL.RawPath = canonicalURI

	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	headers := map[string]string{"host": host}
	for name, values := range req.Header {
		trimmed := make([]string, len(values))
		for i, v := range values {
			trimmed[i] = strings.Join(strings.Fields(v), " ")
		}
		headers[strings.ToLower(name)] = strings.Join(trimmed, ",")
	}
	names := make([]string, 0, len(headers))
	for name := range headers {
		names = append(names, name)
	}
	sort.Strings(names)
	var canonicalHeaders strings.Builder
	for _, name := range names {
		canonicalHeaders.WriteString(name + ":" + headers[name] + "\n")
	}
	signedHeaders := strings.Join(names, ";")

	canonicalRequest := strings.Join([]string{
		req.Method,
		canonicalURI,
		canonicalQuery(req.URL.RawQuery),
		canonicalHeaders.String(),
		signedHeaders,
		payloadHash,
	}, "\n")

	date := amzDate[:8]
	scope := date + "/" + c.region + "/" + c.service + "/aws4_request"
	stringToSign := strings.Join([]string{
		sigV4Algorithm, amzDate, scope, hexSHA256([]byte(canonicalRequest)),
	}, "\n")

	key := hmacSHA256([]byte("AWS4"+c.secretKey), date)
	key = hmacSHA256(key, c.region)
	key = hmacSHA256(key, c.service)
	key = hmacSHA256(key, "aws4_request")
	signature := hex.EncodeToString(hmacSHA256(key, stringToSign))

	req.Header.Set("Authorization", sigV4Algorithm+
		" Credential="+c.accessKey+"/"+scope+
		", SignedHeaders="+signedHeaders+
		", Signature="+signature)
}

// canonicalQuery sorts the query by name then value and escapes both the
// AWS way; a parameter without a value ("?uploads") becomes "uploads=".
func canonicalQuery(rawQuery string) string {
	if rawQuery == "" {
		return ""
	}
	values, err := url.ParseQuery(rawQuery)
	if err != nil {
		// The caller built the URL; a malformed query is a bug in the test.
		panic("s3test: malformed query " + rawQuery + ": " + err.Error())
	}
	type pair struct{ name, value string }
	var pairs []pair
	for name, vs := range values {
		for _, v := range vs {
			pairs = append(pairs, pair{awsEscape(name, true), awsEscape(v, true)})
		}
	}
	// By name, then value: sorting the joined "name=value" strings would put
	// "a-b=" before "a=".
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].name != pairs[j].name {
			return pairs[i].name < pairs[j].name
		}
		return pairs[i].value < pairs[j].value
	})
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p.name + "=" + p.value
	}
	return strings.Join(out, "&")
}

// awsEscape percent-encodes every byte except the unreserved characters
// A-Z a-z 0-9 - _ . ~ (and '/' unless encodeSlash), as SigV4 specifies.
func awsEscape(s string, encodeSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9',
			c == '-', c == '_', c == '.', c == '~', c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

func hexSHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
