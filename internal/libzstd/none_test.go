//go:build !libzstd

package libzstd

import (
	"strings"
	"testing"
)

// A build without the tag says so instead of pretending to compress.
func TestNewWithoutTheTagSaysHowToBuildIt(t *testing.T) {
	if Available {
		t.Fatal("Available in a build without the libzstd tag")
	}
	if _, err := New(1); err == nil || !strings.Contains(err.Error(), "-tags libzstd") {
		t.Fatalf("New: %v, want an error naming -tags libzstd", err)
	}
}
