package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"

	"go.uber.org/zap"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/destination"
	"github.com/zspool/zspool/engine"
	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/zarr"
	"github.com/zspool/zspool/zstdlit"
)

type engineFlags struct {
	engine       string
	memoryBudget string
	workers      int
	zstdEncoder  string
	zstdChecksum bool
}

func (e *engineFlags) register(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
	BoolVar(*bool, string, bool, string)
}) {
	help := "engine: auto (the GPU when there is one), cpu, gpu"
	if !engine.GPUBuilt {
		help = "engine: auto, cpu (this build has no GPU engine)"
	}
	fs.StringVar(&e.engine, "engine", "auto", help)
	fs.StringVar(&e.memoryBudget, "memory-budget", "", "the working set a plan may use; beyond its smallest, spare budget buys overlap (default: an eighth of the host's memory, cgroup limit or RAM, at least 768MiB)")
	fs.IntVar(&e.workers, "workers", 0, "compression workers (0 = one per CPU)")
	encHelp := fmt.Sprintf("zstd encoder: klauspost (at the manifest's level), window (zstdlit's windowed encoder: matches over the whole chunk, at the manifest's level) or segmented (zstdlit, the GPU encoder's reference: each %d-byte segment parsed on its own, its matches reaching back over the block, at the manifest's level; lit is its old name); empty: the engine's default, window on the CPU", zstdlit.SegmentSize)
	if engine.GPUBuilt {
		encHelp += " and the GPU's own encoder, which writes what segmented writes, on the GPU"
	}
	fs.StringVar(&e.zstdEncoder, "zstd-encoder", "", encHelp)
	fs.BoolVar(&e.zstdChecksum, "zstd-checksum", false,
		"append each zstd frame's XXH64 content checksum (zstd's Content_Checksum), which some readers verify; off by default: the shard index's crc32c and the store's per-object checksum already cover the chunks")
}

func (e *engineFlags) options() (pipeline.Options, error) {
	var o pipeline.Options
	var err error
	if e.memoryBudget != "" {
		if o.MemoryBudget, err = parseSize(e.memoryBudget); err != nil {
			return o, fmt.Errorf("--memory-budget: %w", err)
		}
	}
	o.Workers = e.workers
	if err := pipeline.CheckZstdEncoder(e.zstdEncoder); err != nil {
		return o, fmt.Errorf("--zstd-encoder: %w", err)
	}
	o.ZstdEncoder = e.zstdEncoder
	o.ZstdChecksum = e.zstdChecksum
	switch e.engine {
	case "auto", "cpu":
	case "gpu":
		if !engine.GPUBuilt {
			return o, fmt.Errorf("--engine gpu: this build has no GPU engine (build with -tags cuda)")
		}
	default:
		return o, fmt.Errorf("--engine: %q is not one of auto, cpu, gpu", e.engine)
	}
	return o, nil
}

// Exit codes of convert, for scripts: fix the input, or try again later.
const (
	exitInput     = 1 // the acquisition (manifest, raw file) or a plan from it is bad
	exitUsage     = 2 // flags or arguments
	exitTransient = 3 // the destination is unreachable, throttled, full, …: a retry may clear it
)

func cmdConvert(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("convert", "RAW_OR_MANIFEST --dest DIR [flags]", stderr)
	destSpec := fs.String("dest", "", "destination: a directory, file://DIR or s3://bucket/prefix")
	df := newDestFlags(fs)
	logLevel := fs.String("log-level", "info", "debug, info, warn, error")
	quiet := fs.Bool("quiet", false, "no progress output")
	dryRun := fs.Bool("dry-run", false, "print the plan (levels, grids, objects, memory, engine, destination checks) and write nothing")
	cpuProfile := fs.String("cpu-profile", "", "write a Go CPU profile of the conversion to this file (go tool pprof reads it)")
	var ef engineFlags
	ef.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return missingArgs(fs, stderr, "acquisition argument (the manifest acq.json, or the raw file acq.raw beside it)")
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	defer log.Sync()
	opts, err := ef.options()
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if *destSpec == "" {
		return &exitError{code: exitUsage, err: fmt.Errorf("--dest is required")}
	}
	// The acquisition is checked before the destination is even probed:
	// bad input must not depend on, or touch, the destination.
	src, err := pipeline.OpenSource(pipeline.ManifestFor(fs.Arg(0)))
	if err != nil {
		return &exitError{code: exitInput, err: err}
	}
	defer src.Close()
	opts.GPU = engine.PlansGPU(ef.engine)
	if _, err := pipeline.NewPlan(src.Manifest, src.RawName, src.RawSize, opts); err != nil {
		return &exitError{code: exitInput, err: fmt.Errorf("%s: %w", src.ManifestName, err)}
	}
	if *dryRun {
		df.dst.ConditionalWrites = "off" // the probe of conditional writes writes an object
	}
	sink, err := openDest(ctx, log, *destSpec, df, opts.MemoryBudget)
	if err != nil {
		return destError(err)
	}
	if *dryRun {
		return printPlan(ctx, stdout, src, sink, opts, ef.engine)
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("--cpu-profile: %w", err)}
		}
		defer stop()
	}
	res, err := convertSourceWith(ctx, log, src, sink, opts, ef.engine, stderr, *quiet)
	if err != nil {
		if pipeline.IsInputError(err) {
			return &exitError{code: exitInput, err: err}
		}
		return &exitError{code: exitTransient, err: err}
	}
	fmt.Fprintf(stdout, "%s: in %s, out %s, ratio %.2f, %.2fs, %.2f GiB/s -> %s\n",
		res.name, gib(res.BytesIn), gib(res.BytesOut), res.Ratio(), res.Elapsed.Seconds(),
		float64(res.BytesIn)/(1<<30)/res.Elapsed.Seconds(), res.where)
	return nil
}

// destError classifies a destination that could not be opened: options
// that can never work are usage errors; a destination that did not answer
// as hoped may answer later.
func destError(err error) error {
	if errors.Is(err, destination.ErrConfig) {
		return &exitError{code: exitUsage, err: err}
	}
	return &exitError{code: exitTransient, err: err}
}

// printPlan says what convert would do, having checked the input and
// probed the destination, and writes nothing.
func printPlan(ctx context.Context, w io.Writer, src *pipeline.Source, sink destination.Store, opts pipeline.Options, kind string) error {
	plan, err := engine.Plan(src, sink, opts)
	if err != nil {
		return &exitError{code: exitInput, err: fmt.Errorf("%s: %w", src.ManifestName, err)}
	}
	m := src.Manifest
	root := plan.Root()
	fmt.Fprintf(w, "dry run: nothing is written\n")
	fmt.Fprintf(w, "input:       %s, %d bytes of %s (%s)\n", src.RawName, src.RawSize, m.DType, m.ByteOrder)
	fmt.Fprintf(w, "dataset:     %s\n", sink.Where(root))
	planned := engine.CPU
	if opts.GPU {
		planned = engine.GPU
	}
	enc := describeZstdEncoder(opts.ZstdEncoder)
	if m.Compression.Codec == "none" {
		enc = "none (uncompressed)"
	}
	fmt.Fprintf(w, "engine:      %s (--engine %s); zstd level %d, encoder %s; %d compression workers\n", planned, kind, m.Compression.Level, enc, plan.Options.Workers)
	if m.WritesOME() {
		fmt.Fprintf(w, "metadata:    OME-NGFF 0.5\n")
	} else {
		fmt.Fprintf(w, "metadata:    a plain Zarr v3 group (%s)\n", config.OMERule(m.Dimensions))
	}
	var shards int64
	for _, l := range plan.Levels {
		g := l.Grid
		chunks := int64(1)
		for d := range g.Shape {
			chunks *= g.Chunks(d)
		}
		shards += g.ShardCount()
		fmt.Fprintf(w, "level %-5s shape %v, chunk %v, %v chunks per shard: %s, %s\n", l.Path, g.Shape, g.Chunk, g.Shard,
			plural(int(g.ShardCount()), "shard"), plural(int(chunks), "chunk"))
	}
	fmt.Fprintf(w, "objects:     %s and %d metadata documents, in %s\n", plural(int(shards), "shard object"), len(plan.Levels)+1, plural(int(plan.ShardLayers()), "shard layer"))
	fmt.Fprintf(w, "memory:      %s of a %s budget\n", plan.WorkingSet, pipeline.FormatBytes(plan.Options.MemoryBudget))
	fmt.Fprintf(w, "overlap:     %d shard layer(s) per level in flight, %s of rows queued for the store, %d level-0 row(s) compressing at once\n",
		plan.Store.LayersInFlight, plan.Store.Queue(), plan.EngineRows)
	if _, err := sink.Size(ctx, root+"/zarr.json"); err == nil {
		fmt.Fprintf(w, "destination: reachable; a dataset %s is already there and would be replaced\n", root)
	} else if errors.Is(err, zarr.ErrNotFound) {
		fmt.Fprintf(w, "destination: reachable; no dataset %s there yet\n", root)
	} else {
		return &exitError{code: exitTransient, err: fmt.Errorf("destination: %w", err)}
	}
	return nil
}

type convertResult struct {
	*pipeline.Result
	name, where string
}

// convertSource converts an opened acquisition on the engine "auto" picks.
func convertSource(ctx context.Context, log *zap.Logger, src *pipeline.Source, sink destination.Store, opts pipeline.Options, stderr io.Writer, quiet bool) (*convertResult, error) {
	opts.GPU = engine.PlansGPU(engine.Auto)
	return convertSourceWith(ctx, log, src, sink, opts, engine.Auto, stderr, quiet)
}

// convertSourceWith is convertSource on the engine named by --engine;
// opts.GPU says whether that engine will be the GPU (engine.PlansGPU).
func convertSourceWith(ctx context.Context, log *zap.Logger, src *pipeline.Source, sink destination.Store, opts pipeline.Options, kind string, stderr io.Writer, quiet bool) (*convertResult, error) {
	bar := newProgress(stderr, log, "converting "+src.Manifest.Name, src.RawSize, quiet)
	var root string
	res, err := engine.Convert(ctx, log, src, sink, engine.Run{
		Kind: kind, Options: opts,
		Convert: pipeline.ConvertOptions{Version: buildVersion(), Progress: bar.Set},
		Ready: func(p *pipeline.Plan, _ pipeline.Engine, _ *pipeline.ConvertOptions) error {
			// The buffers are long-lived, so the GC's default target
			// (twice the live heap) would let garbage double the
			// footprint; the budget is the limit the plan was sized to
			// (its working set, which is lower, would make the collector
			// run whenever the queue is full).
			debug.SetMemoryLimit(p.Options.MemoryBudget)
			root = p.Root()
			return nil
		},
	})
	bar.Done()
	if err != nil {
		var ie *pipeline.InputError
		if errors.As(err, &ie) {
			// The plan's refusal: the manifest is what to change.
			return nil, &pipeline.InputError{Err: fmt.Errorf("%s: %w", src.ManifestName, ie.Err)}
		}
		return nil, fmt.Errorf("%s: %w", src.ManifestName, err)
	}
	for _, st := range res.Stages {
		log.Debug("stage", zap.String("name", st.Name), zap.Int64("bytes", st.Bytes),
			zap.Duration("busy", st.Busy), zap.Float64("avg_gb_per_s", st.Avg()/1e9))
	}
	log.Debug("converted", zap.Duration("elapsed", res.Elapsed), zap.Int("peak_shards", res.PeakShards))
	return &convertResult{Result: res, name: src.Manifest.Name, where: sink.Where(root)}, nil
}

func gib(n int64) string { return fmt.Sprintf("%.3f GiB", float64(n)/(1<<30)) }

func pct(done, total int64) string {
	if total == 0 {
		return "100%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(done)/float64(total))
}
