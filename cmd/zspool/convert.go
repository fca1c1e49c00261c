package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/zspool/zspool/localfs"
	"github.com/zspool/zspool/pipeline"
)

type engineFlags struct {
	engine       string
	memoryBudget string
	partSize     string
	workers      int
}

func (e *engineFlags) register(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
}) {
	fs.StringVar(&e.engine, "engine", "auto", "engine: auto, cpu (this build has no GPU engine)")
	fs.StringVar(&e.memoryBudget, "memory-budget", "768MiB", "refuse plans whose working set exceeds this")
	fs.StringVar(&e.partSize, "part-size", "16MiB", "S3 multipart part size (min 5MiB); bounds shard size to 10,000 parts")
	fs.IntVar(&e.workers, "workers", 0, "compression workers (0 = one per CPU)")
}

func (e *engineFlags) options() (pipeline.Options, error) {
	var o pipeline.Options
	var err error
	if o.MemoryBudget, err = parseSize(e.memoryBudget); err != nil {
		return o, fmt.Errorf("--memory-budget: %w", err)
	}
	if o.PartSize, err = parseSize(e.partSize); err != nil {
		return o, fmt.Errorf("--part-size: %w", err)
	}
	o.Workers = e.workers
	switch e.engine {
	case "auto", "cpu":
	case "gpu":
		return o, fmt.Errorf("--engine gpu: this build has no GPU engine (build with -tags cuda)")
	default:
		return o, fmt.Errorf("--engine: %q is not one of auto, cpu, gpu", e.engine)
	}
	return o, nil
}

// destination opens where datasets go. Only local directories (a path or
// file://path) exist in this build.
func destination(spec string) (*localfs.Dir, error) {
	switch {
	case spec == "":
		return nil, fmt.Errorf("--dest is required")
	case strings.HasPrefix(spec, "file://"):
		return localfs.New(strings.TrimPrefix(spec, "file://")), nil
	case strings.Contains(spec, "://"):
		return nil, fmt.Errorf("--dest %s: only local directories are supported by this build", spec)
	}
	return localfs.New(spec), nil
}

func cmdConvert(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("convert", "RAW_OR_MANIFEST --dest DIR [flags]", stderr)
	dest := fs.String("dest", "", "destination directory (or file://DIR)")
	logLevel := fs.String("log-level", "info", "debug, info, warn, error")
	quiet := fs.Bool("quiet", false, "no progress output")
	var ef engineFlags
	ef.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return &exitError{code: 2, err: errUsageShown}
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	defer log.Sync()
	opts, err := ef.options()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	sink, err := destination(*dest)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	res, err := convertOne(ctx, log, fs.Arg(0), sink, opts, stderr, *quiet)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: in %s, out %s, ratio %.2f, %.2fs, %.2f GiB/s -> %s\n",
		res.name, gib(res.BytesIn), gib(res.BytesOut), res.Ratio(), res.Elapsed.Seconds(),
		float64(res.BytesIn)/(1<<30)/res.Elapsed.Seconds(), res.where)
	return nil
}

type convertResult struct {
	*pipeline.Result
	name, where string
}

// convertOne validates everything about the acquisition before the
// destination sees a single write, then converts it.
func convertOne(ctx context.Context, log *zap.Logger, arg string, sink *localfs.Dir, opts pipeline.Options, stderr io.Writer, quiet bool) (*convertResult, error) {
	src, err := pipeline.OpenSource(pipeline.ManifestFor(arg))
	if err != nil {
		return nil, err
	}
	defer src.Close()
	plan, err := pipeline.NewPlan(src.Manifest, src.RawName, src.RawSize, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.ManifestName, err)
	}
	eng, err := pipeline.NewCPU(plan)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.ManifestName, err)
	}
	defer eng.Close()
	log.Debug("plan", zap.String("dataset", plan.Root()), zap.Int("levels", len(plan.Levels)),
		zap.Int64("epochs", plan.Epochs()), zap.Int64("shard_layers", plan.ShardLayers()),
		zap.Stringer("working_set", plan.WorkingSet))
	bar := newProgress(stderr, log, "converting "+src.Manifest.Name, src.RawSize, quiet)
	start := time.Now()
	res, err := pipeline.Convert(ctx, log, src, plan, eng, sink, pipeline.ConvertOptions{
		Version:  buildVersion(),
		Progress: bar.Set,
	})
	bar.Done()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.ManifestName, err)
	}
	log.Debug("converted", zap.Duration("elapsed", time.Since(start)))
	return &convertResult{Result: res, name: src.Manifest.Name, where: sink.Root() + "/" + plan.Root()}, nil
}

func gib(n int64) string { return fmt.Sprintf("%.3f GiB", float64(n)/(1<<30)) }

func pct(done, total int64) string {
	if total == 0 {
		return "100%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(done)/float64(total))
}
