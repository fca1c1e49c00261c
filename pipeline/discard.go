package pipeline

import (
	"context"
	"sync/atomic"
)

// Discard is a sink that keeps nothing and counts what it was given: the
// bench's destination, so the engine is measured and not the disk.
type Discard struct {
	Bytes atomic.Int64
}

// Create returns a writer that counts bytes.
func (d *Discard) Create(context.Context, string) (ObjectWriter, error) { return discardWriter{d}, nil }

// Put counts the document.
func (d *Discard) Put(_ context.Context, _ string, b []byte) error {
	d.Bytes.Add(int64(len(b)))
	return nil
}

// Delete does nothing.
func (d *Discard) Delete(context.Context, string) error { return nil }

type discardWriter struct{ d *Discard }

func (w discardWriter) Write(p []byte) (int, error) {
	w.d.Bytes.Add(int64(len(p)))
	return len(p), nil
}
func (discardWriter) Commit() error { return nil }
func (discardWriter) Abort() error  { return nil }
