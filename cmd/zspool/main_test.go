package main

import (
	"os"
	"testing"
)

// TestMain lets a test run this test binary as the zspool command (the crash
// test kills real daemon processes) by setting ZSPOOL_TEST_AS_ZSPOOL=1.
func TestMain(m *testing.M) {
	if os.Getenv("ZSPOOL_TEST_AS_ZSPOOL") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
