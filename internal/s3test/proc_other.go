//go:build !linux

package s3test

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }

// userXattrSupported is only probed on Linux; elsewhere versitygw keeps its
// metadata in a sidecar directory, which works on any filesystem.
func userXattrSupported(dir string) (bool, error) { return false, nil }
