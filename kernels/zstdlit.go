//go:build cuda

package kernels

import (
	"fmt"
	"math/bits"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zstdlit"
)

// The GPU zstd encoder (zstdlit.cuh): the same frames, byte for byte, as
// package zstdlit writes on the CPU.

const (
	// litSlotBytes is a segment's room for packed sequences (kSlotStride).
	litSlotBytes  = litSlotStride * 4
	litSegThreads = zstdlit.MaxBlockSize / zstdlit.SegmentSize
	litParseCTAs  = litSegThreads / litParseThreads // zl_parse's CTAs a block (kParseCTAs)
	litTableBytes = 256 * 4
	litThreads    = 256
	// litMaxChunk bounds a chunk the encoder takes: block offsets within
	// a frame are 32-bit.
	litMaxChunk    = 1 << 31
	litSeedThreads = zstdlit.SegmentSize // zl_seed's CTA: a thread a position of a segment (kSeedThreads)
)

// litSeed3Shared is zl_seed3's table, the strong rung's, and
// litSeed1Shared zl_seed's, the fast rung's; a launch asks for its own
// rung's.
var (
	litSeed3Shared = zstdlit.Options{Level: 3}.SeedTableBytes()
	litSeed1Shared = zstdlit.Options{Level: 1}.SeedTableBytes()
)

// litParse3Shared is zl_parse3's ParseShared: 32 segments' bytes (the
// strong rung's parse keeps no table: zl_own3 hands it its candidates).
var litParse3Shared = litParseThreads * zstdlit.SegmentSize

// litOwnCTAs bounds zl_own3's grid: each CTA clears its lanes' masks
// once, then takes segments in turn.
const litOwnCTAs = 4096

// litChunkSeedCTAs bounds zl_cseed's grid, its CTAs then taking chunks'
// parts in turn.
const litChunkSeedCTAs = 256

// litChunkBits is the chunk table's bits wherever it is built: Device
// splits it into parts (litChunkParts) by them.
var litChunkBits = zstdlit.Options{Level: 3}.ChunkTableBits(2 * zstdlit.MaxBlockSize)

// litTagBits is the bits of hash that zl_cseed keeps below an entry's
// position + 1 for chunks of chunkBytes.
func litTagBits(chunkBytes int64) int { return 32 - bits.Len64(uint64(chunkBytes)+1) }

// litSegs is the number of segment slots of a chunk of n bytes.
func litSegs(n int64) int64 { return max(1, (n+zstdlit.SegmentSize-1)/zstdlit.SegmentSize) }

// litBlocks is the number of zstd blocks of a chunk of n bytes (an empty
// chunk still has one).
func litBlocks(n int64) int64 { return max(1, (n+zstdlit.MaxBlockSize-1)/zstdlit.MaxBlockSize) }

// LitFrameBound is the largest frame the encoder writes for n bytes: the
// header, n bytes in Raw blocks and the checksum when asked for.
func LitFrameBound(n int64, opt zstdlit.Options) int64 {
	b := int64(zstdlit.FrameHeaderSize(int(n))) + n + 3*litBlocks(n)
	if opt.Checksum {
		b += 4
	}
	return b
}

// litScratch is the device memory the encoder plans in: a record and a
// code table per block; every segment's packed sequences and summary
// word; the packed literals and sequences sections, laid out as the
// chunks are; an error word; the frames' options; for the parse, a seed
// candidate a byte and a side slot per sequence slot; and with the
// checksum, a chunk's hash (a word per block: a chunk has at least one)
// and the stream that works it out (hasher).
type litScratch struct {
	blocks, tables, err     cu.DevicePtr
	seqs, meta, lit         cu.DevicePtr
	seed, side, hash        cu.DevicePtr
	capBlocks, capSegs, cap int64
	opt                     zstdlit.Options
	hasher                  *litHasher
	// marks, when set (benchmarks), are recorded after the seeds, the
	// parse, the sequences and the packing of literals.
	marks []cu.Event
}

func (lit *litScratch) mark(s cu.Stream, i int) error {
	if lit.marks == nil {
		return nil
	}
	return lit.marks[i].Record(s)
}

// litBuffer is one of the scratch's device buffers and its size.
type litBuffer struct {
	dst *cu.DevicePtr
	n   int64
}

// buffers lists the scratch's device buffers, sized for its capacity:
// allocLit takes them and litScratchBytes adds them up, so the engine's
// memory check counts what is allocated.
func (s *litScratch) buffers() []litBuffer {
	return []litBuffer{
		{&s.blocks, s.capBlocks * litBlockBytes}, {&s.tables, s.capBlocks * litTableBytes}, {&s.err, 8},
		{&s.seqs, s.capSegs * litSlotBytes}, {&s.meta, s.capSegs * 4}, {&s.lit, s.cap},
		{&s.seed, 4*s.cap + litSeedPad}, {&s.side, s.capSegs * litSlotBytes}, {&s.hash, s.hashBytes()},
	}
}

// hashBytes is the room for the chunks' hashes: none without the
// checksum.
func (s *litScratch) hashBytes() int64 {
	if !s.opt.Checksum {
		return 0
	}
	return 4 * s.capBlocks
}

// litSeedPad follows the seeds: zl_cseed loads a run's eight seeds
// together, up to 3 words past the last chunk's.
const litSeedPad = 32

// newLitScratch is the scratch for up to nChunks chunks of up to
// chunkBytes, nothing allocated yet.
func newLitScratch(chunkBytes, nChunks int64, opt zstdlit.Options) *litScratch {
	return &litScratch{capBlocks: litBlocks(chunkBytes) * nChunks, capSegs: litSegs(chunkBytes) * nChunks,
		cap: chunkBytes * nChunks, opt: opt}
}

// litScratchBytes is the device memory allocLit takes for nChunks chunks
// of up to chunkBytes at opt's level.
func litScratchBytes(chunkBytes, nChunks int64, opt zstdlit.Options) int64 {
	var n int64
	for _, b := range newLitScratch(chunkBytes, nChunks, opt).buffers() {
		n += b.n
	}
	return n
}

// allocLit takes scratch for up to nChunks chunks of up to chunkBytes. On
// the device goroutine.
func allocLit(chunkBytes, nChunks int64, opt zstdlit.Options) (*litScratch, error) {
	s := newLitScratch(chunkBytes, nChunks, opt)
	for _, a := range s.buffers() {
		var err error
		if *a.dst, err = cu.MemAlloc(max(a.n, 8)); err != nil {
			s.free()
			return nil, fmt.Errorf("allocate %s of GPU memory for the zstd encoder: %w", pipeline.FormatBytes(a.n), err)
		}
	}
	if err := cu.MemsetD32(s.err, 0, 2); err != nil {
		s.free()
		return nil, fmt.Errorf("clear the zstd encoder's error word: %w", err)
	}
	if opt.Checksum {
		var err error
		if s.hasher, err = newLitHasher(); err != nil {
			s.free()
			return nil, err
		}
	}
	return s, nil
}

func (s *litScratch) free() {
	if s.hasher != nil {
		s.hasher.close()
		s.hasher = nil
	}
	for _, b := range s.buffers() {
		if *b.dst != 0 {
			_ = cu.MemFree(*b.dst)
			*b.dst = 0
		}
	}
}

// litSizes plans the frames of nChunks chunks of chunkBytes at src and
// puts each frame's size at sizes[keyOf[i]] (sizes[i] when keyOf is 0);
// chunks whose nonfill flag is 0 are absent and get size 0 (every chunk is
// encoded when nonfill is 0). On the device goroutine.
func (d *Device) litSizes(s cu.Stream, lit *litScratch, src cu.DevicePtr, chunkBytes, nChunks int64,
	nonfill, keyOf, sizes cu.DevicePtr) error {
	bpc := litBlocks(chunkBytes)
	nBlocks := bpc * nChunks
	if nBlocks > lit.capBlocks || litSegs(chunkBytes)*nChunks > lit.capSegs || chunkBytes*nChunks > lit.cap {
		return fmt.Errorf("zstd encoder: %d chunks of %d bytes, room for %d blocks, %d segments, %d bytes",
			nChunks, chunkBytes, lit.capBlocks, lit.capSegs, lit.cap)
	}
	if chunkBytes >= litMaxChunk {
		return fmt.Errorf("zstd encoder: chunks of %d bytes, at most %d", chunkBytes, litMaxChunk-1)
	}
	if nBlocks == 0 {
		return nil
	}
	if err := d.litHash(s, lit, src, chunkBytes, nChunks, nonfill); err != nil {
		return err
	}
	if err := d.litMatches(s, lit, src, chunkBytes, nChunks, nonfill); err != nil {
		return err
	}
	grid := int(min(nBlocks, 1<<30))
	cb, nb := cu.DevicePtr(chunkBytes), cu.DevicePtr(nBlocks)
	seqGrid := int(min(ceilDiv(uint64(nBlocks), litSeqWarps), 1<<30))
	if err := d.fn.litSeq.Launch(seqGrid, 1, 1, 32*litSeqWarps, 1, 1, 0, s,
		args(cb, cu.DevicePtr(bpc), nb, nonfill, lit.seqs, lit.side, lit.meta, lit.lit, lit.blocks)); err != nil {
		return fmt.Errorf("launch zstd sequences: %w", err)
	}
	if err := lit.mark(s, 2); err != nil {
		return err
	}
	if err := d.fn.litCompact.Launch(grid, 1, 1, litSegThreads, 1, 1, 0, s,
		args(src, cb, cu.DevicePtr(bpc), nb, lit.seqs, lit.meta, lit.lit, lit.blocks)); err != nil {
		return fmt.Errorf("launch zstd literal packing: %w", err)
	}
	if err := lit.mark(s, 3); err != nil {
		return err
	}
	if err := d.fn.litPlan.Launch(grid, 1, 1, litThreads, 1, 1, 0, s,
		args(src, lit.lit, cb, cu.DevicePtr(bpc), nb, nonfill, lit.blocks, lit.tables)); err != nil {
		return fmt.Errorf("launch zstd plan: %w", err)
	}
	if err := d.fn.litTree.Launch(int(min(ceilDiv(uint64(nBlocks), litTreeThreads/2), 1<<30)), 1, 1, litTreeThreads, 1, 1, 0, s,
		args(cb, cu.DevicePtr(bpc), nb, lit.blocks, lit.tables)); err != nil {
		return fmt.Errorf("launch zstd tree descriptions: %w", err)
	}
	fg := int(min(ceilDiv(uint64(nChunks), scatterThreads), 1024))
	if err := d.fn.litFrame.Launch(fg, 1, 1, scatterThreads, 1, 1, 0, s,
		args(cu.DevicePtr(chunkBytes), cu.DevicePtr(bpc), cu.DevicePtr(nChunks), lit.blocks, keyOf, sizes, lit.checksum())); err != nil {
		return fmt.Errorf("launch zstd frame layout: %w", err)
	}
	return nil
}

// litMatches launches the match stages of litSizes' chunks: the seeds
// (from level 3 the chunk's and the segments' own candidates too), then
// the parse, which leaves each segment's sequences in lit. On the device
// goroutine.
func (d *Device) litMatches(s cu.Stream, lit *litScratch, src cu.DevicePtr, chunkBytes, nChunks int64,
	nonfill cu.DevicePtr) error {
	bpc := litBlocks(chunkBytes)
	nBlocks := bpc * nChunks
	grid := int(min(nBlocks, 1<<30))
	cb, nb := cu.DevicePtr(chunkBytes), cu.DevicePtr(nBlocks)
	key := cu.DevicePtr(lit.opt.KeyBytes())
	phase := cu.DevicePtr(lit.opt.GridPhase()) // the grid's first position, for zl_seed2 and zl_parse2
	// zl_seed measures its seeds' first bytes for the fast rung's parse;
	// zl_seed3 does not (kSeedMeasured). zl_seed2 and zl_parse2 take the
	// fast rung's grid, a thread a grid position.
	seedFn, parse, parseShared := d.fn.litSeed, d.fn.litParse, 0
	seedThreads := litSeedThreads / lit.opt.Grid()
	switch {
	case lit.opt.Strong():
		seedFn, parse, parseShared = d.fn.litSeed3, d.fn.litParse3, litParse3Shared
	case lit.opt.Grid() == 2:
		seedFn, parse = d.fn.litSeed2, d.fn.litParse2
	}
	if err := seedFn.Launch(grid, 1, 1, seedThreads, 1, 1, lit.opt.SeedTableBytes(), s,
		args(src, cb, cu.DevicePtr(bpc), nb, nonfill, lit.seed, phase)); err != nil {
		return fmt.Errorf("launch zstd match seeds: %w", err)
	}
	if tb := lit.opt.ChunkTableBits(int(chunkBytes)); tb != 0 {
		parts := int64(d.chunkParts)
		if err := d.fn.litChunkSeed.Launch(int(min(parts*nChunks, litChunkSeedCTAs)), 1, 1,
			litChunkSeedThreads, 1, 1, litChunkPartBytes(tb, d.chunkParts), s,
			args(src, cb, cu.DevicePtr(bpc), cu.DevicePtr(nChunks), nonfill, lit.seed, key, cu.DevicePtr(tb),
				cu.DevicePtr(litTagBits(chunkBytes)), cu.DevicePtr(parts))); err != nil {
			return fmt.Errorf("launch zstd chunk seeds: %w", err)
		}
	}
	if lit.opt.Strong() {
		if err := d.fn.litOwn3.Launch(int(min(nBlocks*litSegThreads/litOwnWarps, litOwnCTAs)), 1, 1,
			32*litOwnWarps, 1, 1, 0, s,
			args(src, cb, cu.DevicePtr(bpc), nb, nonfill, lit.seed, cu.DevicePtr(lit.opt.ShortestMatch()))); err != nil {
			return fmt.Errorf("launch zstd own candidates: %w", err)
		}
	}
	if err := lit.mark(s, 0); err != nil {
		return err
	}
	if err := parse.Launch(int(min(litParseCTAs*nBlocks, 1<<30)), 1, 1, litParseThreads, 1, 1, parseShared, s,
		args(src, cb, cu.DevicePtr(bpc), nb, nonfill, lit.seqs, lit.meta, cu.DevicePtr(lit.opt.ShortestMatch()),
			lit.seed, lit.side, key, phase)); err != nil {
		return fmt.Errorf("launch zstd match parse: %w", err)
	}
	return lit.mark(s, 1)
}

// litWrite writes the frames litSizes planned into out, chunk i's at
// offsets[keyOf[i]] (offsets[i] when keyOf is 0). On the device goroutine.
func (d *Device) litWrite(s cu.Stream, lit *litScratch, src cu.DevicePtr, chunkBytes, nChunks int64,
	keyOf, offsets, out cu.DevicePtr) error {
	bpc := litBlocks(chunkBytes)
	nBlocks := bpc * nChunks
	if nBlocks == 0 {
		return nil
	}
	grid := int(min(4*nBlocks, 1<<30))
	if err := d.fn.litEncode.Launch(grid, 1, 1, litThreads, 1, 1, 0, s,
		args(src, lit.lit, cu.DevicePtr(chunkBytes), cu.DevicePtr(bpc), cu.DevicePtr(nBlocks), lit.blocks, lit.tables,
			keyOf, offsets, out, lit.err, lit.checksum())); err != nil {
		return fmt.Errorf("launch zstd encode: %w", err)
	}
	if !lit.opt.Checksum {
		return nil
	}
	if err := s.Wait(lit.hasher.done, 0); err != nil {
		return fmt.Errorf("wait for the zstd checksums: %w", err)
	}
	cgrid := int(min(ceilDiv(uint64(nChunks), checksumThreads), 1<<30))
	if err := d.fn.litChecksum.Launch(cgrid, 1, 1, checksumThreads, 1, 1, 0, s,
		args(cu.DevicePtr(bpc), cu.DevicePtr(nChunks), lit.blocks, keyOf, offsets, lit.hash, out)); err != nil {
		return fmt.Errorf("launch zstd checksum: %w", err)
	}
	return nil
}

// checksumThreads is zl_xxh's and zl_checksum's block size (their launch
// bound).
const checksumThreads = 256

func (lit *litScratch) checksum() cu.DevicePtr {
	if lit.opt.Checksum {
		return 1
	}
	return 0
}

// litCheck reads and clears the encoder's error word once the stream that
// used lit is idle. A nonzero word means the kernels disagreed with their
// own plan: a bug, never bad input. On the device goroutine.
func (lit *litScratch) check() error {
	var w [2]uint32
	if err := cu.MemcpyDtoH(unsafe.Pointer(&w[0]), lit.err, 8); err != nil {
		return fmt.Errorf("read the zstd encoder's error word: %w", err)
	}
	if w[0] == 0 {
		return nil
	}
	if err := cu.MemsetD32(lit.err, 0, 2); err != nil {
		return fmt.Errorf("clear the zstd encoder's error word: %w", err)
	}
	return fmt.Errorf("zstd encoder: internal error %#x (a stream's size differs from its plan)", w[0])
}
