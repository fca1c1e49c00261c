// Package pipeline is zspool's engine-neutral core: the plan of an
// acquisition (levels, grids, epochs, shard layers, working set), the
// streaming raw reader, the CPU engine, shard assembly and the metadata
// documents, tied together by Convert.
package pipeline

import (
	"fmt"
	"math"
	"runtime"
	"strconv"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/zarr"
	"github.com/zspool/zspool/zstdlit"
)

// Defaults for the knobs a plan is checked against.
const (
	// encoderOverhead is what one pooled zstd encoder holds besides its
	// output (history and tables of the fastest levels), measured loosely.
	encoderOverhead = 4 << 20
	// runtimeOverhead is the process beside its buffers: Go runtime and
	// stacks, SDK clients, HTTP buffers, the garbage between collections
	// (the CLI sets the working set as the GC's soft limit).
	runtimeOverhead = 32 << 20
)

// Options are the run-time knobs that shape a plan.
type Options struct {
	MemoryBudget int64 // refuse plans whose working set exceeds this; 0 = default
	Workers      int   // compression workers; 0 = GOMAXPROCS
	// Limits are what the destination asks of the plan (LimitsOf): its
	// memory counts toward the working set, and no shard may outgrow the
	// largest object it takes.
	Limits Limits
	// ZstdEncoder picks the zstd encoder when the manifest's codec is
	// zstd: EncoderDefault, EncoderKlauspost, EncoderWindow or
	// EncoderSegmented (EncoderLit, its old name, is taken for it;
	// NewPlan keeps the canonical name).
	//
	// CPU engine: default the windowed encoder (Plan.HostZstdEncoder).
	// GPU engine: default its own GPU encoder, which writes exactly what
	// EncoderSegmented writes; the encoders OnHost names make it
	// compress on the CPU with them.
	//
	// The manifest's compression.level applies to every encoder:
	// klauspost's and the windowed encoder's ladders, and the segmented
	// encoder's two rungs (below 3, and 3 and up), which the GPU engine's
	// default follows too (SegmentedOptions).
	ZstdEncoder string
	// ZstdChecksum appends each frame's XXH64 content checksum (zstd's
	// Content_Checksum: the low 4 bytes, with Content_Checksum_flag set
	// in the frame header), klauspost and zstdlit alike. Off by default:
	// the shard index already carries a crc32c and an S3 store a CRC per
	// object, so this only adds a per-chunk check some readers verify.
	// The crc32c covers the index alone and the object CRC is an S3
	// store's, over a whole shard: on a local destination this is the one
	// check of the chunk bytes.
	ZstdChecksum bool
	// GPU plans the GPU engine's host memory instead of the CPU engine's:
	// no compressors on the host unless it compresses there (zstd with an
	// encoder OnHost names), and two batches of every level's stored chunks
	// in pinned memory, where the copies back land.
	GPU bool
}

// The zstd encoders Options.ZstdEncoder names.
const (
	// EncoderDefault is the engine's own choice: the windowed encoder on
	// the CPU engine (Plan.HostZstdEncoder), the GPU encoder on the GPU
	// engine.
	EncoderDefault = ""
	// EncoderKlauspost is github.com/klauspost/compress/zstd at the
	// manifest's level, on the CPU.
	EncoderKlauspost = "klauspost"
	// EncoderWindow is zstdlit's windowed encoder on the CPU: matches
	// searched over the whole chunk, at the manifest's level
	// (zstdlit.WindowOptionsFor).
	EncoderWindow = "window"
	// EncoderSegmented is zstdlit on the CPU, the byte-exact reference
	// of the GPU encoder: each segment (zstdlit.SegmentSize bytes)
	// parsed on its own, so that the GPU parses every segment on a
	// thread of its own.
	EncoderSegmented = "segmented"
	// EncoderLit is EncoderSegmented's old name, from when it wrote
	// literals only; existing configs and scripts keep working.
	EncoderLit = "lit"
)

// CheckZstdEncoder refuses a name other than EncoderDefault,
// EncoderKlauspost, EncoderWindow, EncoderSegmented and EncoderLit, so that callers
// (flags, the daemon's config) can refuse a misspelt knob before anything
// is read or written. The message names the value and the choices, not
// the knob: callers prefix their own name for it.
func CheckZstdEncoder(name string) error {
	switch name {
	case EncoderDefault, EncoderKlauspost, EncoderWindow, EncoderSegmented, EncoderLit:
		return nil
	}
	return fmt.Errorf("%q is not one of %q, %q, %q (or %q, its old name; or empty for the engine's default)",
		name, EncoderKlauspost, EncoderWindow, EncoderSegmented, EncoderLit)
}

// CanonicalZstdEncoder is the name an encoder goes by: EncoderLit is
// EncoderSegmented, every other name is itself.
func CanonicalZstdEncoder(name string) string {
	if name == EncoderLit {
		return EncoderSegmented
	}
	return name
}

// SegmentedOptions are the segmented encoder's options for this plan, the
// one place both engines take them from: the CPU's zstdlit and the GPU's
// kernels must write the same bytes. The manifest's level picks the
// parse's rung; its 0, zstd's "default level", is 3, as it is for the
// windowed encoder. The element size picks the rung's grid, and the byte
// order where a pixel's high byte lies on it.
func (p *Plan) SegmentedOptions() zstdlit.Options {
	level := p.Manifest.Compression.Level
	if level == 0 {
		level = 3
	}
	return zstdlit.Options{Checksum: p.Options.ZstdChecksum, Level: level, ElemSize: p.Elem,
		BigEndian: p.Manifest.ByteOrder == "big"}
}

// WindowOptions are the windowed encoder's options for this plan: the
// ladder's rung for the manifest's level and the element size.
func (p *Plan) WindowOptions() zstdlit.WindowOptions {
	o := zstdlit.WindowOptionsFor(p.Manifest.Compression.Level, p.Elem)
	o.Checksum = p.Options.ZstdChecksum
	return o
}

// HostZstdEncoder is the encoder that compresses on the host's cores:
// Options.ZstdEncoder, or for EncoderDefault the windowed encoder. On the
// camera corpus it keeps at least 99% of libzstd's ratio at levels 1 and
// 3, where klauspost keeps 91% (dim frames, level 1) and 97-99% (level
// 3); at level 1 it takes a quarter less time than klauspost over the
// corpus, at level 3 2% more (README, "zstd encoders").
func (p *Plan) HostZstdEncoder() string {
	if p.Options.ZstdEncoder != EncoderDefault {
		return p.Options.ZstdEncoder
	}
	return EncoderWindow
}

func (o Options) withDefaults() Options {
	if o.MemoryBudget == 0 {
		o.MemoryBudget = int64(config.DefaultMemoryBudget())
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return o
}

// Level is one resolution level's array.
type Level struct {
	Index int
	Path  string // array path under the dataset root: "0", "1", …
	Grid  zarr.Grid
	Scale []float64 // OME scale per dim: level 0's times the size ratio to level 0
	// Translation is where the level's first pixel centre sits, relative
	// to level 0's, per dim (nil: nowhere else). A box reduce (mean, min,
	// max) puts a level-l centre between the 2^l level-0 pixels it covers;
	// decimate keeps level-0 centres.
	Translation []float64
}

// Plan is everything decided about one acquisition before a byte of it is
// processed.
type Plan struct {
	Manifest   *config.Manifest
	Options    Options
	Elem       int
	RawSize    int64
	FrameBytes int64 // bytes of one dim-0 slice in the raw file
	Levels     []Level
	WorkingSet WorkingSet
	// Store is how the assembler feeds the store: what the budget leaves
	// beyond the smallest working set buys shard layers in flight and a
	// queue of row copies.
	Store StorePlan
	// EngineRows is how many level-0 chunk rows the CPU engine has in
	// flight: 2 when the budget holds a second row of compressed chunks,
	// so that the workers start on the next row while the last chunks of
	// one finish, instead of waiting for them at every row's end.
	EngineRows int
	// autoWorkers says Options.Workers was left to the plan: one per core,
	// fewer where the budget holds no more (budget).
	autoWorkers bool
}

// WorkingSet is the planner's memory estimate, by part.
type WorkingSet struct {
	Staging    int64 // raw epoch buffers (double-buffered)
	Chunks     int64 // scatter buffers and encoder state
	Compressed int64 // one epoch of compressed chunks per level (the GPU engine: two, in pinned memory)
	Shards     int64 // open shards × the sink's per-shard buffer, and its parts in flight
	Runtime    int64 // the process beside its buffers
	// Overlap is what the plan spends beyond the smallest working set so
	// the store works beside the engine (Plan.Store): the queue of row
	// copies and the open shards of the extra layers in flight.
	Overlap int64
}

// Total is the sum of all parts.
func (w WorkingSet) Total() int64 { return w.Minimum() + w.Overlap }

// Minimum is the working set with no overlap: what the plan cannot run
// without.
func (w WorkingSet) Minimum() int64 {
	return w.Staging + w.Chunks + w.Compressed + w.Shards + w.Runtime
}

func (w WorkingSet) String() string {
	return fmt.Sprintf("%s (staging %s, chunk buffers %s, compressed %s, sink %s, runtime %s, overlap %s)",
		FormatBytes(w.Total()), FormatBytes(w.Staging), FormatBytes(w.Chunks), FormatBytes(w.Compressed), FormatBytes(w.Shards),
		FormatBytes(w.Runtime), FormatBytes(w.Overlap))
}

// NewPlan checks a parsed manifest against the raw file's size and the
// options, and lays out every level. Errors about the input are
// InputErrors; errors about the knobs say which knob to change.
func NewPlan(m *config.Manifest, rawName string, rawSize int64, opts Options) (*Plan, error) {
	auto := opts.Workers <= 0
	opts = opts.withDefaults()
	if err := CheckZstdEncoder(opts.ZstdEncoder); err != nil {
		return nil, fmt.Errorf("zstd_encoder: %w", err)
	}
	opts.ZstdEncoder = CanonicalZstdEncoder(opts.ZstdEncoder)
	p := &Plan{Manifest: m, Options: opts, Elem: m.DType.Size(), RawSize: rawSize, autoWorkers: auto}
	if p.Elem == 0 {
		return nil, badInput(fmt.Errorf("dtype: %q is not supported", m.DType))
	}
	r := len(m.Dimensions)
	shape := make([]int64, r)
	chunk := make([]int64, r)
	shard := make([]int64, r)
	p.FrameBytes = int64(p.Elem)
	for d, dim := range m.Dimensions {
		shape[d], chunk[d], shard[d] = dim.Size, dim.Chunk, dim.Shard
		if d > 0 {
			if p.FrameBytes > math.MaxInt64/dim.Size {
				return nil, badInput(fmt.Errorf("dimensions: a frame of this shape overflows 64 bits"))
			}
			p.FrameBytes *= dim.Size
		}
	}
	// The raw file must hold exactly the shape (or, when dim 0 is
	// inferred, a whole number of frames).
	if shape[0] == 0 {
		if rawSize == 0 || rawSize%p.FrameBytes != 0 {
			return nil, badInput(&SizeError{File: rawName, Size: rawSize, FrameSize: p.FrameBytes})
		}
		shape[0] = rawSize / p.FrameBytes
		// An inferred dim 0 can be shorter than the chunk the manifest
		// asked for; clamp rather than refuse a short acquisition.
		chunk[0] = min(chunk[0], shape[0])
	} else if want, ok := mulOK(shape[0], p.FrameBytes); !ok || rawSize != want {
		return nil, badInput(&SizeError{File: rawName, Size: rawSize, Want: want, FrameSize: p.FrameBytes})
	}
	for d := range shard {
		// A shard wider than the chunk grid only lengthens every index.
		shard[d] = min(shard[d], ceilDiv(shape[d], chunk[d]))
	}
	p.Levels = planLevels(m, zarr.Grid{Shape: shape, Chunk: chunk, Shard: shard})
	if err := p.checkObjectSize(); err != nil {
		return nil, err
	}
	if err := p.budget(); err != nil {
		return nil, err
	}
	return p, nil
}

// budget estimates the smallest working set — one shard layer per level
// in flight, rows written as they come — and refuses it above the budget;
// what is left buys overlap (sizeStore).
func (p *Plan) budget() error {
	p.Store = StorePlan{LayersInFlight: 1}
	p.WorkingSet = p.estimate()
	// Workers one per core are the default, not a need: where the budget
	// does not hold their chunk buffers (several concurrent jobs on a
	// host of many cores), fewer run, down to one, before it refuses.
	for p.autoWorkers && p.hostCompressors() && p.Options.Workers > 1 && p.WorkingSet.Total() > p.Options.MemoryBudget {
		p.Options.Workers--
		p.WorkingSet = p.estimate()
	}
	if p.WorkingSet.Total() > p.Options.MemoryBudget {
		return fmt.Errorf("working set %s exceeds memory_budget %s: raise memory_budget, or lower dimensions[0].chunk (each epoch is %s)",
			p.WorkingSet, FormatBytes(p.Options.MemoryBudget), FormatBytes(p.EpochBytes()))
	}
	p.sizeStore(p.Options.MemoryBudget - p.WorkingSet.Total())
	return nil
}

// Bounds of the store's overlap: more layers than this in flight, or more
// queued than this, buys nothing measurable.
const (
	maxLayersInFlight = 8
	maxQueueRows      = 8
	maxQueueBytes     = 1 << 30
	// minQueueBytes is the queue of small rows: each shard's piece of a
	// row takes whole blocks.
	minQueueBytes = 64 << 20
	// minQueueCores is the fewest cores on which the CPU engine's rows
	// are queued for the store rather than written as they come.
	minQueueCores = 4
)

// sizeStore spends spare bytes of the budget on overlap: first a queue of
// row copies (at least the largest row, or none), so the store writes
// beside the engine; then more shard layers in flight, each as much as
// one layer of open shards holds. A larger budget never buys less.
func (p *Plan) sizeStore(spare int64) {
	var row, rows, layer int64 // the largest level's row, a row of every level, a layer of every level
	for _, l := range p.Levels {
		r := ChunksPerEpoch(l.Grid) * CompressBound(p.ChunkBytes(l))
		row, rows = max(row, r), rows+r
		layer += ShardsPerLayer(l.Grid) * (p.Options.Limits.ShardBuffer + l.Grid.SlotsPerShard()*zarr.IndexEntrySize)
	}
	q := min(spare/2, max(maxQueueRows*row, minQueueBytes), maxQueueBytes)
	// The queue's copies pay where the engine leaves cores idle (the GPU
	// encoding) or cores are many, so that writing rows one after another
	// would leave the compressors waiting (measured on 16 cores: 0.56 →
	// 0.90 GiB/s). On a small host every core compresses, and a copy for
	// the store only takes time from them (2 cores: 0.25 → 0.20 GiB/s).
	if q < row+blockSize || (p.hostCompressors() && runtime.GOMAXPROCS(0) < minQueueCores) {
		q = 0
	}
	spare -= q
	// The CPU engine lends its rows of compressed chunks to the writers
	// instead of copying them: the queue is then whole rows of every
	// level (the copies were 3% of a 16-core convert's CPU time; lending
	// took it 3.9% faster). What the rows leave of q is not spent, so
	// that a larger budget still leaves at least as much for what follows.
	lent, used := 0, q
	if n := min(q/rows, maxQueueRows); n > 0 && !p.Options.GPU {
		lent, used = int(n), n*rows
	}
	p.EngineRows = 1
	var second int64 // the CPU engine's second level-0 row of compressed chunks
	if l0 := p.Levels[0]; !p.Options.GPU {
		if row0 := ChunksPerEpoch(l0.Grid) * CompressBound(p.ChunkBytes(l0)); spare >= row0 {
			p.EngineRows, second = 2, row0
			spare -= second
		}
	}
	// layer > 0: every shard holds index entries.
	extra := min(spare/layer, maxLayersInFlight-1)
	p.Store = StorePlan{LayersInFlight: 1 + int(extra), QueueBytes: used, LentRows: lent}
	p.WorkingSet.Overlap = used + second + extra*layer
}

// FrameBytes is the size of one level frame: a slice of the level's
// array at one index of dim 0.
func (l Level) FrameBytes(elem int) int64 {
	n := int64(elem)
	for _, s := range l.Grid.Shape[1:] {
		n *= s
	}
	return n
}

// ForCPU is a GPU plan re-planned for the CPU engine (where the GPU
// engine refuses it), refused as NewPlan would when it does not fit.
func (p *Plan) ForCPU() (*Plan, error) {
	if !p.Options.GPU {
		return p, nil
	}
	q := *p
	q.Options.GPU = false
	if err := q.budget(); err != nil {
		return nil, err
	}
	return &q, nil
}

// planLevels lays out level 0 and, when the manifest asks for a pyramid,
// each halving of the downsampled dims until every one fits one chunk or
// the level count is reached.
func planLevels(m *config.Manifest, g0 zarr.Grid) []Level {
	r := len(g0.Shape)
	base := make([]float64, r)
	for d, dim := range m.Dimensions {
		base[d] = dim.Scale
		if base[d] == 0 {
			base[d] = 1
		}
	}
	levels := []Level{{Index: 0, Path: "0", Grid: g0, Scale: base}}
	if m.Multiscale == nil {
		return levels
	}
	for {
		prev := levels[len(levels)-1]
		if m.Multiscale.Levels > 0 && len(levels) >= m.Multiscale.Levels {
			return levels
		}
		more := false
		for d, dim := range m.Dimensions {
			if dim.Downsampled() && prev.Grid.Shape[d] > prev.Grid.Chunk[d] {
				more = true
			}
		}
		if !more {
			return levels
		}
		l := len(levels)
		g := zarr.Grid{Shape: make([]int64, r), Chunk: make([]int64, r), Shard: make([]int64, r)}
		scale := make([]float64, r)
		var shift []float64
		boxes := m.Multiscale.Method != "decimate"
		for d, dim := range m.Dimensions {
			g.Shape[d] = prev.Grid.Shape[d]
			scale[d] = base[d]
			if dim.Downsampled() {
				g.Shape[d] = ceilDiv(g.Shape[d], 2)
				// From the actual sizes: ceil-halving 777 gives 389, a
				// ratio a little under 2.
				scale[d] = base[d] * float64(g0.Shape[d]) / float64(g.Shape[d])
				if boxes {
					if shift == nil {
						shift = make([]float64, r)
					}
					shift[d] = base[d] * (math.Exp2(float64(l)) - 1) / 2
				}
			}
			g.Chunk[d] = min(g0.Chunk[d], g.Shape[d])
			g.Shard[d] = min(g0.Shard[d], ceilDiv(g.Shape[d], g.Chunk[d]))
		}
		levels = append(levels, Level{Index: l, Path: strconv.Itoa(l), Grid: g, Scale: scale, Translation: shift})
	}
}

// checkObjectSize refuses shards that could outgrow the largest object the
// destination takes.
func (p *Plan) checkObjectSize() error {
	lim := p.Options.Limits
	if lim.MaxObject <= 0 {
		return nil
	}
	for _, l := range p.Levels {
		bound := l.Grid.SlotsPerShard()*CompressBound(p.ChunkBytes(l)) + zarr.IndexSize(l.Grid.SlotsPerShard())
		if bound > lim.MaxObject {
			return fmt.Errorf("level %d: a shard can reach %s, and the destination takes at most %s in one object (%s): lower dimensions[*].shard",
				l.Index, FormatBytes(bound), FormatBytes(lim.MaxObject), lim.MaxObjectHint)
		}
	}
	return nil
}

// CompressBound is the most a chunk of n bytes can take once stored: zstd
// adds a frame header (at most 18 bytes), 3 bytes per 128 KiB block and,
// with Options.ZstdChecksum, a 4-byte checksum to incompressible data.
func CompressBound(n int64) int64 { return n + (n>>17+1)*3 + 32 }

// ChunkBytes is the decoded size of one padded chunk of level l.
func (p *Plan) ChunkBytes(l Level) int64 { return l.Grid.ChunkElems() * int64(p.Elem) }

// EpochFrames is n_0, the frames of one full epoch.
func (p *Plan) EpochFrames() int64 { return p.Levels[0].Grid.Chunk[0] }

// Epochs is the number of level-0 epochs (chunk rows along dim 0).
func (p *Plan) Epochs() int64 { return p.Levels[0].Grid.Chunks(0) }

// EpochBytes is the raw size of one full epoch.
func (p *Plan) EpochBytes() int64 { return p.EpochFrames() * p.FrameBytes }

// ShardLayers is the number of level-0 shard layers.
func (p *Plan) ShardLayers() int64 { return p.Levels[0].Grid.Shards(0) }

// ChunksPerEpoch is the chunk count of one chunk row of level l.
func ChunksPerEpoch(g zarr.Grid) int64 {
	n := int64(1)
	for d := 1; d < g.Rank(); d++ {
		n *= g.Chunks(d)
	}
	return n
}

// ShardsPerLayer is the shard count of one shard layer of level l.
func ShardsPerLayer(g zarr.Grid) int64 {
	n := int64(1)
	for d := 1; d < g.Rank(); d++ {
		n *= g.Shards(d)
	}
	return n
}

func (p *Plan) estimate() WorkingSet {
	w := WorkingSet{Staging: 2 * p.EpochBytes(), Runtime: runtimeOverhead}
	zstd := p.Manifest.Compression.Codec == "zstd"
	hostCompressors := p.hostCompressors()
	for i, l := range p.Levels {
		cb := p.ChunkBytes(l)
		row := ChunksPerEpoch(l.Grid)
		if hostCompressors {
			// Every level has its own compressor: scratch and an encoder
			// per worker, and one row of compressed chunks.
			w.Chunks += int64(p.Options.Workers) * (cb + encoderOverhead)
			w.Compressed += row * CompressBound(cb)
		}
		if p.Options.GPU {
			// Two batches come back into pinned memory: frames when the
			// GPU compresses, raw chunks otherwise.
			back := cb
			if zstd && !hostCompressors {
				back = CompressBound(cb)
			}
			w.Compressed += 2 * row * back
		}
		// Each open shard holds its sink buffer and its index entries.
		w.Shards += ShardsPerLayer(l.Grid) * (p.Options.Limits.ShardBuffer + l.Grid.SlotsPerShard()*zarr.IndexEntrySize)
		if i > 0 {
			// A pyramid level holds one row of dense frames and, for a
			// z-stack, a frame waiting for its pair.
			w.Staging += (l.Grid.Chunk[0] + 1) * l.FrameBytes(p.Elem)
		}
	}
	w.Shards += p.Options.Limits.Fixed
	return w
}

// hostCompressors says whether the engine compresses on the host's cores:
// the CPU engine, and the GPU engine with an encoder OnHost names.
func (p *Plan) hostCompressors() bool {
	zstd := p.Manifest.Compression.Codec == "zstd"
	return !p.Options.GPU || (zstd && OnHost(p.Options.ZstdEncoder))
}

// OnHost says whether the named zstd encoder runs on the host's cores on
// the GPU engine too: klauspost and window do; the GPU engine's own
// (EncoderDefault) and segmented run there on the GPU.
func OnHost(encoder string) bool {
	return encoder == EncoderKlauspost || encoder == EncoderWindow
}

// ResumeAlign is, in level-0 frames, the spacing of points where every
// level starts a shard layer at once: a conversion can restart there with
// fresh pyramid state and rewrite no shard from its middle.
func (p *Plan) ResumeAlign() int64 {
	zdown := len(p.Levels) > 1 && p.Manifest.Dimensions[0].Downsampled()
	align := int64(1)
	for i, l := range p.Levels {
		span := l.Grid.Shard[0] * l.Grid.Chunk[0]
		if zdown {
			span <<= i
		}
		align = lcm(align, span)
	}
	return align
}

// LayerFrames is how many level-0 frames level l's shard layers reach once
// layers 0…layer are committed.
func (p *Plan) LayerFrames(level int, layer int64) int64 {
	l := p.Levels[level]
	frames := (layer + 1) * l.Grid.Shard[0] * l.Grid.Chunk[0]
	if len(p.Levels) > 1 && p.Manifest.Dimensions[0].Downsampled() {
		frames <<= level
	}
	return min(frames, p.Levels[0].Grid.Shape[0])
}

func lcm(a, b int64) int64 {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func mulOK(a, b int64) (int64, bool) {
	if a != 0 && b > math.MaxInt64/a {
		return 0, false
	}
	return a * b, true
}
