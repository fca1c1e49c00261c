//go:build !libzstd

// Package libzstd is libzstd behind the benchmarks' encoder signature;
// this build has none (build with -tags libzstd and Debian's libzstd-dev).
package libzstd

import "errors"

// Available reports whether this build links libzstd.
const Available = false

// Encoder is a stand-in: New always fails without the libzstd tag.
type Encoder struct{}

// New reports that this build has no libzstd.
func New(level int) (*Encoder, error) {
	return nil, errors.New("libzstd: built without -tags libzstd")
}

// Version is empty without libzstd.
func Version() string { return "" }

// Encode is never reached: New fails.
func (e *Encoder) Encode(dst, src []byte) ([]byte, error) {
	return dst, errors.New("libzstd: built without -tags libzstd")
}

// Close does nothing.
func (e *Encoder) Close() {}
