package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain lets a test run this test binary as the zspool command (the crash
// test kills real daemon processes) by setting ZSPOOL_TEST_AS_ZSPOOL=1.
func TestMain(m *testing.M) {
	if os.Getenv("ZSPOOL_TEST_AS_ZSPOOL") == "1" {
		main()
		os.Exit(0)
	}
	// The SDK's default chain must never wander off to EC2 IMDS (a
	// non-loopback address) or pick up a developer's own AWS settings.
	// Set once for the whole binary, not per test, so the slow S3 tests
	// can run in parallel (t.Setenv forbids that).
	for k, v := range map[string]string{
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": filepath.Join(os.TempDir(), "zspool-tests-have-no-aws-config"),
	} {
		os.Setenv(k, v)
	}
	os.Exit(m.Run())
}
