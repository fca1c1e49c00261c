package engine

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/zspool/zspool/pipeline"
)

// Run is how one conversion runs: on which engine, with which plan knobs
// and per-run hooks.
type Run struct {
	Kind    string           // auto, cpu or gpu
	Options pipeline.Options // Limits are filled from the store
	Convert pipeline.ConvertOptions
	// Ready, when set, sees the plan and the built engine before anything
	// is written, and may adjust the conversion's options (a resumed job
	// sets its first layer; bench places frames in the engine's staging
	// buffers). An error stops the run.
	Ready func(p *pipeline.Plan, eng pipeline.Engine, co *pipeline.ConvertOptions) error
	// Devices, when set, keeps the GPU context across runs (New).
	Devices *Devices
	// New overrides the engine New would build (tests wrap engines).
	New func(*pipeline.Plan) (pipeline.Engine, error)
}

// Plan plans an opened acquisition against what the store asks of it.
func Plan(src *pipeline.Source, store pipeline.Sink, opts pipeline.Options) (*pipeline.Plan, error) {
	opts.Limits = pipeline.LimitsOf(store)
	return pipeline.NewPlan(src.Manifest, src.RawName, src.RawSize, opts)
}

// Convert plans the acquisition against the store, builds the engine and
// streams the acquisition through it into the store. A plan that cannot
// run is an InputError: it will not run on a retry either.
func Convert(ctx context.Context, log *zap.Logger, src *pipeline.Source, store pipeline.Sink, r Run) (*pipeline.Result, error) {
	p, err := Plan(src, store, r.Options)
	if err != nil {
		return nil, &pipeline.InputError{Err: err}
	}
	newEngine := r.New
	if newEngine == nil {
		newEngine = func(p *pipeline.Plan) (pipeline.Engine, error) { return New(log, r.Kind, p, r.Devices) }
	}
	eng, err := newEngine(p)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	defer eng.Close()
	co := r.Convert
	if r.Ready != nil {
		if err := r.Ready(p, eng, &co); err != nil {
			return nil, err
		}
	}
	log.Debug("plan", zap.String("dataset", p.Root()), zap.Int("levels", len(p.Levels)),
		zap.Int64("epochs", p.Epochs()), zap.Int64("shard_layers", p.ShardLayers()),
		zap.String("memory_budget", pipeline.FormatBytes(p.Options.MemoryBudget)),
		zap.Stringer("working_set", p.WorkingSet), zap.Int("workers", p.Options.Workers),
		zap.Int("layers_in_flight", p.Store.LayersInFlight), zap.String("store_queue", p.Store.Queue()),
		zap.Int("engine_rows", p.EngineRows),
		zap.String("store_fixed", pipeline.FormatBytes(p.Options.Limits.Fixed)))
	return pipeline.Convert(ctx, log, src, p, eng, store, co)
}
