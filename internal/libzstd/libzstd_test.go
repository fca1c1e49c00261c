//go:build libzstd

package libzstd

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// libzstd's frames decode to what went in: the cgo glue passes the right
// buffers and keeps what dst held.
func TestEncodeRoundTripsThroughADecoder(t *testing.T) {
	enc, err := New(1)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	src := bytes.Repeat([]byte("camera frame 0123456789 "), 10000)
	for _, in := range [][]byte{src, nil, src[:7]} {
		prefix := []byte("kept")
		out, err := enc.Encode(prefix, in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(out, prefix) {
			t.Fatal("Encode dropped dst's bytes")
		}
		got, err := dec.DecodeAll(out[len(prefix):], nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, in) {
			t.Fatalf("%d bytes in, %d out", len(in), len(got))
		}
	}
}
