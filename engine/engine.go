// Package engine picks and builds the engine that runs a plan — the CPU
// engine (pipeline/cpu), or the GPU engine (kernels) in a build with
// -tags cuda on a machine with a usable GPU — and drives one conversion
// through it. convert, bench and the daemon all convert through Run.
package engine

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/zspool/zspool/pipeline"
	"github.com/zspool/zspool/pipeline/cpu"
)

// The engine kinds a config or a flag names.
const (
	Auto = "auto" // the GPU when this build has the engine and a GPU is usable, else the CPU
	CPU  = "cpu"
	GPU  = "gpu"
)

// Check refuses a kind other than auto, cpu and gpu, and gpu in a build
// without the GPU engine. The message names the value, not the knob:
// callers prefix their own name for it.
func Check(kind string) error {
	switch kind {
	case Auto, CPU:
		return nil
	case GPU:
		if !GPUBuilt {
			return errors.New("gpu: this build has no GPU engine (build with -tags cuda)")
		}
		return nil
	}
	return fmt.Errorf("%q is not one of auto, cpu, gpu", kind)
}

// PlansGPU says whether kind will run on the GPU, so that the plan counts
// the GPU engine's memory: gpu, or auto where the binary has the engine
// and a GPU is usable.
func PlansGPU(kind string) bool {
	if kind == GPU {
		return true
	}
	if kind != Auto || !GPUBuilt {
		return false
	}
	_, ok := GPUStatus()
	return ok
}

// New builds the engine kind names for a plan. auto is the GPU when this
// build has the GPU engine, a GPU is usable and the engine takes the plan;
// otherwise, and with a warning when the GPU was there but failed, the
// CPU, re-planned for the CPU's memory.
//
// devs, when not nil, keeps the GPU context across calls (a daemon's
// jobs); nil opens and closes one per engine.
func New(log *zap.Logger, kind string, p *pipeline.Plan, devs *Devices) (pipeline.Engine, error) {
	if kind == GPU {
		return newGPU(p, devs)
	}
	if kind == Auto && GPUBuilt {
		if desc, ok := GPUStatus(); ok {
			eng, err := newGPU(p, devs)
			if err == nil {
				log.Debug("engine", zap.String("gpu", desc))
				return eng, nil
			}
			if errors.Is(err, errUnsupported) {
				log.Info("engine auto: the GPU engine does not take this plan, using the CPU", zap.Error(err))
			} else {
				log.Warn("engine auto: the GPU failed, using the CPU", zap.Error(err))
			}
		}
	}
	cp, err := p.ForCPU()
	if err != nil {
		return nil, fmt.Errorf("engine auto: the CPU engine, which takes over from the GPU: %w", err)
	}
	return cpu.New(cp)
}
