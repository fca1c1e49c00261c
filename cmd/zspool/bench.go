package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/destination"
	"github.com/zspool/zspool/engine"
	"github.com/zspool/zspool/kernels"
	"github.com/zspool/zspool/pipeline"
)

// benchSpec is the synthetic acquisition a bench runs on: frames of
// side×side uint16 camera data, chunked depth×chunk×chunk.
type benchSpec struct {
	frames, side, chunk, depth int64
	shard                      int64 // chunks per shard along y and x; 0: the manifest's default
	codec                      string
	level                      int
	multiscale                 bool // a mean pyramid over y and x, default levels
	data                       *frameSource
}

func (b benchSpec) frameBytes() int64 { return b.side * b.side * int64(b.data.elem) }

// manifest is the acquisition's manifest document.
func (b benchSpec) manifest(data string) ([]byte, error) {
	y := map[string]any{"name": "y", "type": "space", "size": b.side, "chunk": min(b.chunk, b.side), "unit": "micrometer", "scale": 0.65}
	x := map[string]any{"name": "x", "type": "space", "size": b.side, "chunk": min(b.chunk, b.side), "unit": "micrometer", "scale": 0.65}
	if b.shard > 0 {
		y["shard"], x["shard"] = b.shard, b.shard
	}
	m := map[string]any{
		"version": 1, "data": data, "dtype": b.data.dtype, "name": "bench",
		"dimensions":  []map[string]any{{"name": "t", "type": "time", "size": 0, "chunk": b.depth}, y, x},
		"compression": map[string]any{"codec": b.codec, "level": b.level},
		"attributes":  map[string]any{"instrument": "zspool synthetic camera"},
	}
	if b.multiscale {
		m["multiscale"] = map[string]any{"method": "mean"}
	}
	return json.MarshalIndent(m, "", "  ")
}

// passes are the conversions one bench makes: the spec alone or, with
// --multiscale, the single-level figure first and then the pyramid's, on
// the same input.
func (b benchSpec) passes() []benchSpec {
	if !b.multiscale {
		return []benchSpec{b}
	}
	single := b
	single.multiscale = false
	return []benchSpec{single, b}
}

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", "[flags]", stderr)
	size := fs.String("size", "2GiB", "synthetic input size (whole 2048×2048 uint16 frames)")
	frame := fs.Int64("frame", 2048, "frame height and width in pixels")
	chunk := fs.Int64("chunk", 256, "chunk height and width in pixels")
	depth := fs.Int64("depth", 0, "frames per chunk along t, i.e. per epoch (0: 1 on the CPU, 16 on the GPU)")
	codec := fs.String("codec", "zstd", "zstd or none")
	level := fs.Int("level", 1, "zstd level")
	data := fs.String("data", "camera", "camera (bright cells: shot noise on structure, read noise, a 100 ADU offset, drift and bleaching), dim (sparse dim signal), flat (shot-noise-limited flat field), 8bit (uint8 camera), mix (the old bench mix: gaussian, uniform and constant frames), or FILE: a raw file of --frame×--frame uint16 frames")
	shard := fs.Int64("shard", 0, "chunks per shard along y and x (0: the manifest's default)")
	destURL := fs.String("dest", "", "write the dataset here (a directory or s3://bucket/prefix; bench.ome.zarr is replaced on every pass), as convert does; empty: a sink that keeps nothing, the engine's figure alone")
	df := newDestFlags(fs)
	source := fs.String("source", "", "file: convert a synthetic raw file; pinned (GPU): synthetic frames placed in the engine's pinned staging buffers, no file (default: pinned on the GPU engine unless it compresses on the host, --zstd-encoder klauspost or window with --codec zstd; file otherwise)")
	keep := fs.String("keep", "", "write the synthetic raw file here and keep it (to compare other tools on the same bytes)")
	multiscale := fs.Bool("multiscale", false, "convert twice, level 0 alone and with a mean pyramid over y and x (default levels), and report the pyramid's end-to-end rate against the single-level one")
	var ef engineFlags
	ef.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	total, err := parseSize(*size)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--size: %w", err)}
	}
	opts, err := ef.options()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	kind := engine.CPU
	if engine.PlansGPU(ef.engine) {
		kind = engine.GPU
	}
	opts.GPU = kind == "gpu"
	spec := benchSpec{side: *frame, chunk: *chunk, depth: *depth, shard: *shard, codec: *codec, level: *level, multiscale: *multiscale}
	if err := spec.fill(*data, kind, total); err != nil {
		return &exitError{code: 2, err: err}
	}
	src, err := benchSource(*source, spec, kind, opts)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	// Every flag is checked before the destination is opened (and probed).
	log, _ := newLogger(stderr, "info")
	var sink pipeline.Sink = &pipeline.Discard{}
	if *destURL != "" {
		store, err := openDest(ctx, log, *destURL, df, opts.MemoryBudget)
		if err != nil {
			return destError(err)
		}
		sink = store
	}
	var rates []float64
	switch src {
	case "file":
		rates, err = benchFile(ctx, log, spec, kind, opts, sink, *keep, stdout, stderr)
	case "pinned":
		rates, err = benchPinned(ctx, log, spec, kind, opts, sink, stdout)
	}
	if err != nil {
		return err
	}
	if len(rates) == 2 {
		fmt.Fprintf(stdout, "\nmultiscale: single-level %.3f GiB/s, with pyramid %.3f GiB/s: the pyramid runs at %.1f%% of the single-level rate\n",
			rates[0]/(1<<30), rates[1]/(1<<30), 100*rates[1]/rates[0])
	}
	return nil
}

// fill completes b from the flags: the frame source named by --data, the
// epoch depth (0: 1 on the CPU, 16 on the GPU) and the frame count, from
// --size or, for --data FILE, from the file, which must hold whole frames.
func (b *benchSpec) fill(data, kind string, total int64) error {
	var err error
	if b.data, err = newFrameSource(data, b.side); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	if b.depth <= 0 {
		b.depth = 1
		if kind == "gpu" {
			b.depth = 16
		}
	}
	b.frames = max(1, total/b.frameBytes())
	if b.data.file != "" {
		fi, err := os.Stat(b.data.file)
		if err != nil {
			return fmt.Errorf("--data: %w", err)
		}
		if fi.Size() < b.frameBytes() || fi.Size()%b.frameBytes() != 0 {
			return fmt.Errorf("--data %s: %d bytes is not a whole number of %d×%d %s frames (--frame)", b.data.file, fi.Size(), b.side, b.side, b.data.dtype)
		}
		b.frames = fi.Size() / b.frameBytes()
	}
	return nil
}

// benchSource is --source, or its default: pinned when the GPU does all
// the work on the bytes (codec none, or its own zstd encoder rather than
// one on the host), since the file reader, not the engine, would then be
// what a file source measures; file otherwise.
func benchSource(flag string, spec benchSpec, kind string, opts pipeline.Options) (string, error) {
	src := flag
	if src == "" {
		src = "file"
		if kind == "gpu" && (spec.codec == "none" || !pipeline.OnHost(opts.ZstdEncoder)) {
			src = "pinned"
		}
	}
	switch {
	case src != "file" && src != "pinned":
		return "", fmt.Errorf("--source: %q is not file or pinned", src)
	case src == "pinned" && spec.data.file != "":
		return "", fmt.Errorf("--source pinned places generated frames; --data FILE needs --source file")
	}
	return src, nil
}

// benchFile converts a synthetic raw file written to disk first, the way
// `zspool convert` reads one, into a sink that keeps nothing: once per
// pass, each pass's end-to-end rate returned.
func benchFile(ctx context.Context, log *zap.Logger, spec benchSpec, kind string, opts pipeline.Options, sink pipeline.Sink, keep string, stdout, stderr io.Writer) ([]float64, error) {
	dir, err := os.MkdirTemp("", "zspool-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	raw := filepath.Join(dir, "bench.raw")
	if keep != "" {
		raw = keep
	}
	if spec.data.file != "" {
		// The manifest must sit beside the raw file (zspool follows no
		// links): a hard link brings the file here, or else the manifest
		// goes beside it.
		raw = filepath.Join(dir, "bench.raw")
		if err := os.Link(spec.data.file, raw); err != nil {
			raw = spec.data.file
		}
	} else {
		bar := newProgress(stderr, log, "generating "+spec.data.name, spec.frames*spec.frameBytes(), false)
		err = writeFrames(ctx, raw, spec.frames, spec.frameBytes(), spec.data.fill, bar.Set)
		bar.Done()
		if err != nil {
			return nil, err
		}
	}
	var rates []float64
	for i, pass := range spec.passes() {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		rate, err := benchFilePass(ctx, log, pass, kind, opts, sink, raw, stdout)
		if err != nil {
			return nil, err
		}
		rates = append(rates, rate)
	}
	return rates, nil
}

func benchFilePass(ctx context.Context, log *zap.Logger, spec benchSpec, kind string, opts pipeline.Options, sink pipeline.Sink, raw string, stdout io.Writer) (float64, error) {
	doc, err := spec.manifest(filepath.Base(raw))
	if err != nil {
		return 0, err
	}
	manifest := filepath.Join(filepath.Dir(raw), "."+filepath.Base(raw)+".zspool-bench.json")
	if err := os.WriteFile(manifest, doc, 0o644); err != nil {
		return 0, err
	}
	defer os.Remove(manifest)

	src, err := pipeline.OpenSource(manifest)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	if err := clearBench(ctx, sink); err != nil {
		return 0, err
	}
	var eng pipeline.Engine
	res, err := engine.Convert(ctx, log, src, sink, engine.Run{
		Kind: kind, Options: opts, Convert: pipeline.ConvertOptions{Version: buildVersion()},
		Ready: func(plan *pipeline.Plan, e pipeline.Engine, _ *pipeline.ConvertOptions) error {
			eng = e
			benchHeader(stdout, e, plan, spec, "raw file "+raw)
			return benchCopies(stdout, e)
		},
	})
	if err != nil {
		return 0, err
	}
	writeStages(stdout, res.Stages)
	writeStore(stdout, res, sink)
	return benchResult(stdout, res.BytesIn, res.BytesOut, res.Elapsed, eng), nil
}

// benchPinned measures the GPU engine alone: synthetic frames placed once
// in its pinned staging buffers (no file, no reader), epoch after epoch
// through the engine into shard bytes in host memory, handed to a sink
// that keeps nothing. Once per pass, each pass's end-to-end rate returned.
func benchPinned(ctx context.Context, log *zap.Logger, spec benchSpec, kind string, opts pipeline.Options, sink pipeline.Sink, stdout io.Writer) ([]float64, error) {
	var rates []float64
	for i, pass := range spec.passes() {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		rate, err := benchPinnedPass(ctx, log, pass, kind, opts, sink, stdout)
		if err != nil {
			return nil, err
		}
		rates = append(rates, rate)
	}
	return rates, nil
}

func benchPinnedPass(ctx context.Context, log *zap.Logger, spec benchSpec, kind string, opts pipeline.Options, sink pipeline.Sink, stdout io.Writer) (float64, error) {
	doc, err := spec.manifest("bench.raw")
	if err != nil {
		return 0, err
	}
	m, err := config.ParseManifest(doc, "bench")
	if err != nil {
		return 0, err
	}
	// No file: the epochs come from the engine's staging buffers.
	src := &pipeline.Source{ManifestName: "bench.json", Manifest: m, RawName: "bench.raw", RawSize: spec.frames * spec.frameBytes()}
	if err := clearBench(ctx, sink); err != nil {
		return 0, err
	}
	var eng pipeline.Engine
	res, err := engine.Convert(ctx, log, src, sink, engine.Run{
		Kind: kind, Options: opts, Convert: pipeline.ConvertOptions{Version: buildVersion()},
		Ready: func(plan *pipeline.Plan, e pipeline.Engine, co *pipeline.ConvertOptions) error {
			eng = e
			st, ok := e.(pipeline.Stager)
			if !ok {
				return &exitError{code: 2, err: fmt.Errorf("--source pinned needs the GPU engine (this is the %s engine)", kind)}
			}
			bufs := st.StagingBuffers()
			fillFrames(bufs, spec)
			benchHeader(stdout, e, plan, spec, "synthetic frames placed in the engine's pinned staging buffers")
			if err := benchCopies(stdout, e); err != nil {
				return err
			}
			// A short untimed pass loads and warms everything first.
			warm := pipeline.ConvertOptions{Epochs: &pinnedEpochs{plan: plan, bufs: bufs, n: min(4, plan.Epochs())}}
			if _, err := pipeline.Convert(ctx, log, src, plan, e, &pipeline.Discard{}, warm); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
			if r, ok := e.(pipeline.StageResetter); ok {
				r.ResetStages()
			}
			co.Epochs = &pinnedEpochs{plan: plan, bufs: bufs, n: plan.Epochs()}
			return nil
		},
	})
	if err != nil {
		return 0, err
	}
	writeStages(stdout, res.Stages)
	writeStore(stdout, res, sink)
	return benchResult(stdout, res.BytesIn, res.BytesOut, res.Elapsed, eng), nil
}

// clearBench removes the dataset an earlier pass left, untimed: a store
// with conditional writes would refuse to replace its objects.
func clearBench(ctx context.Context, sink pipeline.Sink) error {
	if r, ok := sink.(destination.Store); ok {
		if err := r.RemoveAll(ctx, pipeline.DatasetRoot("bench")); err != nil {
			return fmt.Errorf("removing the last pass's dataset: %w", err)
		}
	}
	return nil
}

// writeStore prints what reached the store.
func writeStore(w io.Writer, res *pipeline.Result, sink pipeline.Sink) {
	where := "a sink that keeps nothing (the engine's figure, not the product's)"
	if s, ok := sink.(destination.Store); ok {
		where = s.Where(pipeline.DatasetRoot("bench"))
	}
	fmt.Fprintf(w, "store: %s, %.3f GiB in %.3f s; at most %d shards written or committing at once\n",
		where, float64(res.BytesOut)/(1<<30), res.Elapsed.Seconds(), res.PeakShards)
}

// pinnedEpochs yields n epochs, epoch e from staging buffer e%2, where the
// frames were placed before the clock started: a source that takes no
// time.
type pinnedEpochs struct {
	plan *pipeline.Plan
	bufs [][]byte
	n, e int64
}

func (p *pinnedEpochs) Next() (pipeline.Epoch, bool) {
	if p.e >= p.n {
		return pipeline.Epoch{}, false
	}
	ef := p.plan.EpochFrames()
	frames := min(ef, p.plan.Levels[0].Grid.Shape[0]-p.e*ef)
	ep := pipeline.Epoch{Index: p.e, Frames: frames, Data: p.bufs[p.e%2][:frames*p.plan.FrameBytes]}
	p.e++
	return ep, true
}

func (p *pinnedEpochs) Release(pipeline.Epoch) {}
func (p *pinnedEpochs) Err() error             { return nil }
func (p *pinnedEpochs) Close()                 {}

// fillFrames writes the bench mix into the two staging buffers, frames in
// parallel.
func fillFrames(bufs [][]byte, spec benchSpec) {
	fb := spec.frameBytes()
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for b, buf := range bufs {
		for i := int64(0); (i+1)*fb <= int64(len(buf)); i++ {
			fr := int64(b)*spec.depth + i
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				spec.data.fill(buf[i*fb:(i+1)*fb], fr)
			}()
		}
	}
	wg.Wait()
}

func benchHeader(w io.Writer, eng pipeline.Engine, plan *pipeline.Plan, spec benchSpec, source string) {
	what := fmt.Sprintf("engine cpu, %d workers", plan.Options.Workers)
	// The encoder in effect is named even when it is the engine's own,
	// since the CPU engine's default is an encoder of its own.
	enc := plan.Options.ZstdEncoder
	d, gpu := eng.(kernels.DeviceReporter)
	if gpu {
		what = fmt.Sprintf("engine gpu on %s, %d compression workers", d.Device(), plan.Options.Workers)
	}
	switch {
	case enc != pipeline.EncoderDefault:
	case gpu:
		enc = "the GPU's own (segmented)"
	default:
		enc = plan.HostZstdEncoder() + " (the default)"
	}
	fmt.Fprintf(w, "%s\n%d frames of %d×%d %s (%s), chunk %d×%d×%d (epoch %s), codec %s",
		what, spec.frames, spec.side, spec.side, spec.data.dtype, spec.data.describe, plan.EpochFrames(), spec.chunk, spec.chunk, pipeline.FormatBytes(plan.EpochBytes()), spec.codec)
	if spec.codec == "zstd" {
		fmt.Fprintf(w, " level %d", spec.level)
		fmt.Fprintf(w, ", encoder %s", enc)
		if plan.Options.ZstdChecksum {
			fmt.Fprint(w, ", checksum")
		}
	}
	g := plan.Levels[0].Grid
	fmt.Fprintf(w, "\ngrid: shape %s chunk %s shard %s\n", joinInts(g.Shape), joinInts(g.Chunk), joinInts(g.ShardShape()))
	fmt.Fprintf(w, "source: %s\n", source)
	fmt.Fprintf(w, "memory: %s of a %s budget; %d shard layer(s) per level in flight, %s queued for the store, %d level-0 row(s) compressing at once\n",
		plan.WorkingSet, pipeline.FormatBytes(plan.Options.MemoryBudget), plan.Store.LayersInFlight, plan.Store.Queue(), plan.EngineRows)
	if len(plan.Levels) > 1 {
		fmt.Fprintf(w, "pyramid: %d levels, %s:", len(plan.Levels), plan.Manifest.Multiscale.Method)
		for _, l := range plan.Levels {
			fmt.Fprintf(w, " %v", l.Grid.Shape[1:])
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "level 0 only")
	}
}

// benchCopies prints the GPU's pinned copy bandwidth, the ceiling of the
// engine's copies.
func benchCopies(w io.Writer, eng pipeline.Engine) error {
	m, ok := eng.(kernels.CopyMeasurer)
	if !ok {
		return nil
	}
	r, err := m.MeasureCopies(20)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "pinned copies: H2D %.2f GiB/s, D2H %.2f GiB/s, both at once %.2f GiB/s\n", r.H2D/(1<<30), r.D2H/(1<<30), r.Both/(1<<30))
	return nil
}

// benchResult prints the end-to-end figure and returns the rate in bytes
// of input a second.
func benchResult(w io.Writer, in, out int64, elapsed time.Duration, eng pipeline.Engine) float64 {
	ratio := 0.0
	if out > 0 {
		ratio = float64(in) / float64(out)
	}
	rate := float64(in) / elapsed.Seconds()
	// GiB and GiB/s, as convert and demo print them.
	fmt.Fprintf(w, "end-to-end: in %.3f GiB, out %.3f GiB, ratio %.4f, %.3f s, %.3f GiB/s\n",
		float64(in)/(1<<30), float64(out)/(1<<30), ratio, elapsed.Seconds(), rate/(1<<30))
	if m, ok := eng.(kernels.CopyMeasurer); ok {
		if r, err := m.MeasureCopies(20); err == nil {
			fmt.Fprintf(w, "pinned H2D measured after the run: %.2f GiB/s; end-to-end is %.1f%% of it\n", r.H2D/(1<<30), 100*rate/r.H2D)
		}
	}
	return rate
}

// writeStages prints the stage table in GB/s (10^9 bytes) and busy
// milliseconds. The reader is the source and the assembler the sink; a
// stage that was not timed shows dashes.
func writeStages(w io.Writer, stages []pipeline.Stage) {
	fmt.Fprintf(w, "%-10s %10s %10s %10s %10s\n", "stage", "GB", "avg GB/s", "best GB/s", "ms")
	for _, s := range stages {
		name := s.Name
		switch name {
		case "read":
			name = "source"
		case "assemble":
			name = "sink"
		}
		if s.Busy <= 0 {
			fmt.Fprintf(w, "%-10s %10.3f %10s %10s %10s\n", name, float64(s.Bytes)/1e9, "-", "-", "-")
			continue
		}
		fmt.Fprintf(w, "%-10s %10.3f %10.3f %10.3f %10.1f\n", name, float64(s.Bytes)/1e9, s.Avg()/1e9, s.Best/1e9, float64(s.Busy)/1e6)
	}
}

// joinInts writes 1,2,3: the form bench/gpu-host.sh hands to tensorstore.
func joinInts(v []int64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(parts, ",")
}
