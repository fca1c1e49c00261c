package pipeline

import "context"

// Sink is a destination as the pipeline sees it. Keys are relative to the
// destination root ("<name>.ome.zarr/0/c/0/1"). A shard is written once,
// front to back, through an ObjectWriter; metadata documents are small
// whole objects.
type Sink interface {
	// Create starts the object at key. Nothing is visible at key until
	// Commit returns nil.
	Create(ctx context.Context, key string) (ObjectWriter, error)
	// Put stores a small object whole.
	Put(ctx context.Context, key string, data []byte) error
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// ObjectWriter receives one object's bytes in order. Write may block to
// push back on the pipeline (an S3 sink with every upload slot busy).
type ObjectWriter interface {
	Write(p []byte) (int, error)
	// Commit makes the object durable and visible under its key.
	Commit() error
	// Abort discards everything written; safe after a failed Commit.
	Abort() error
}
