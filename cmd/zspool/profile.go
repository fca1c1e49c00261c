package main

import (
	"os"
	"runtime/pprof"
)

// startCPUProfile profiles the process into path until the returned stop
// is called: where a conversion spends its CPU, for whoever tunes it.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
