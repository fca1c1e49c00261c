package daemon

import (
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/s3sink"
)

// The S3 store is the one that leaves pending uploads: the daemon must see
// it as an uploadStore, or it would never sweep them, and as a Finisher,
// or a restart could not finish the shards a job sealed.
var (
	_ uploadStore       = (*s3sink.Sink)(nil)
	_ pipeline.Finisher = (*s3sink.Sink)(nil)
)
