package s3test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// sysProcAttr makes the kernel kill a server if the test binary dies without
// running its cleanups (a `go test -timeout` panic, a SIGKILL), so no server
// outlives the tests that started it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// userXattrSupported reports whether files in dir accept user.* extended
// attributes, which versitygw's posix backend stores object metadata in.
// (ext4, xfs and btrfs do; tmpfs only since Linux 6.6; some overlay setups
// do not.)
func userXattrSupported(dir string) (bool, error) {
	f, err := os.CreateTemp(dir, "xattr-probe-")
	if err != nil {
		return false, err
	}
	name := f.Name()
	f.Close()
	defer os.Remove(filepath.Clean(name))
	err = syscall.Setxattr(name, "user.zspool.s3test.probe", []byte("1"), 0)
	if errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.EPERM) {
		return false, nil
	}
	return err == nil, err
}
