package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestABuildFromACheckoutReportsItsCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary")
	}
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout (or no git): %v", err) // the stamp needs one
	}
	bin := filepath.Join(t.TempDir(), "zspool")
	// -buildvcs=true overrides a GOFLAGS=-buildvcs=false in the
	// environment, as the Makefile's -buildvcs=auto does where git works.
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	short := strings.TrimSpace(string(rev))[:12]
	if line := strings.SplitN(string(out), "\n", 2)[0]; !strings.Contains(line, short) || strings.Contains(line, " dev\n") {
		t.Fatalf("version line %q does not carry the commit %s", line, short)
	}
}
