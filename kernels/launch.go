package kernels

// The launch geometry the host and the CUDA sources share, outside the
// cuda build so that CI, which has no GPU, checks it against the sources
// (constants_test.go).
const (
	litParseThreads     = 32   // zl_parse's CTA: a warp, a segment a lane (kParseThreads)
	litChunkSeedThreads = 1024 // zl_cseed's CTA (kCSeedThreads)
	// litChunkSeedParts is zl_cseed's CTAs a chunk, each keeping the part
	// of the chunk table whose hashes start with its bits (kCSeedPartBits).
	litChunkSeedParts = 4
)
