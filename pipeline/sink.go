package pipeline

import (
	"context"
	"errors"
	"time"
)

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

// Limits is what a store asks of a plan.
type Limits struct {
	ShardBuffer int64 // memory held per open shard (an S3 store: its filling part)
	Fixed       int64 // memory held whatever the plan (an S3 store: its parts in flight)
	MaxObject   int64 // the largest object the store takes; 0: no bound
	// MaxObjectHint says what sets MaxObject and how to raise it, for the
	// plan's refusal of a shard that could outgrow it.
	MaxObjectHint string
}

// Limiter is a store that states Limits. A store that asks nothing of a
// plan (a local directory) need not implement it.
type Limiter interface {
	Limits() Limits
}

// LimitsOf is what sink asks of a plan.
func LimitsOf(sink Sink) Limits {
	if l, ok := sink.(Limiter); ok {
		return l.Limits()
	}
	return Limits{}
}

// PendingUpload is an object a store began and has not finished: an S3
// multipart upload, which costs until it is completed or aborted.
type PendingUpload struct {
	Key       string // the object key, from the bucket's root
	ID        string
	Initiated time.Time
}

// UploadHooks see every pending upload a store is about to start, has
// started, and has finished (completed or aborted): a journal records
// intents and open upload ids so a crashed job's uploads can be aborted on
// restart. An error from Before fails the write before anything is
// created. Each may be nil.
type UploadHooks struct {
	Before  func(key string) error
	Started func(key, uploadID string)
	Done    func(key, uploadID string)
}

// SealedObject is an object whose every byte the store holds but which is
// not yet visible at its key: an S3 multipart upload with all its parts
// uploaded. Finishing it needs none of its bytes again, so once a journal
// has recorded it, its layer counts as stored even before it is visible.
type SealedObject struct {
	Key      string `json:"key"` // from the bucket's root
	UploadID string `json:"upload_id"`
	Size     int64  `json:"size"`
	Checksum string `json:"checksum"` // the whole object's, as the store states it
	// Resume is the resume point (as ConvertOptions.LayerDone reports
	// them) reached once this object, and every object sealed before it,
	// is visible: how far a restart that finishes them may skip.
	Resume int64 `json:"resume"`
}

// Sealer is an ObjectWriter that can store every byte before it makes the
// object visible. It lets the commits of several layers overlap without
// loosening the journal: seals are recorded in order, the objects made
// visible side by side, and a layer counted as done once visible, in
// order; a restart finishes the recorded seals instead of redoing them.
//
// After a successful Seal, Commit only makes the object visible and leaves
// a failed attempt to Finish (the record is the authority now); Abort
// still discards it. ok is false when the writer had nothing to seal (an
// object small enough to be written whole at Commit): the caller commits
// it in order instead.
type Sealer interface {
	Seal() (obj SealedObject, ok bool, err error)
}

// Finisher is a store that makes a sealed object visible from its record
// alone, as a resumed job does after a crash. It returns ErrUnfinishable
// when the store no longer holds the sealed bytes and the object is not
// stored either: the layer must be written again.
type Finisher interface {
	Finish(ctx context.Context, obj SealedObject) error
}

// ErrUnfinishable: a sealed object's upload is gone and the object is not
// stored.
var ErrUnfinishable = errors.New("sealed object can no longer be finished")
