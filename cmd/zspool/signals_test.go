package main

import (
	"os"
	"syscall"
	"testing"

	"go.uber.org/zap"
)

func TestOneSignalSeenByBothListenersStopsButNeverExits(t *testing.T) {
	// The worst case, made certain: the signal is queued and main's
	// context is already done when the watcher first looks. Each trial's
	// select picks at random between them, so the old counting exited in
	// about half of these trials.
	for trial := range 200 {
		sigs := make(chan os.Signal, 2)
		sigs <- syscall.SIGTERM
		done := make(chan struct{})
		close(done)
		stopped := make(chan struct{}, 4)
		exited := make(chan int, 1)
		go watchSignals(zap.NewNop(), sigs, done, func() { stopped <- struct{}{} }, func(code int) { exited <- code })
		<-stopped
		<-stopped // both the signal and the context stop it (stop is idempotent)
		select {
		case code := <-exited:
			t.Fatalf("trial %d: one SIGTERM exited %d", trial, code)
		default:
		}
		sigs <- syscall.SIGTERM // a real second signal does exit
		if code := <-exited; code != 130 {
			t.Fatalf("trial %d: the second signal exited %d, want 130", trial, code)
		}
	}
}
