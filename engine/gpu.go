//go:build cuda

package engine

import (
	"fmt"

	"github.com/zspool/zspool/kernels"
	"github.com/zspool/zspool/pipeline"
)

// GPUBuilt says this binary has the GPU engine.
const GPUBuilt = true

// errUnsupported marks a plan the GPU engine does not take.
var errUnsupported = kernels.ErrUnsupported

// GPUStatus describes the GPU this process would use, and whether it can.
func GPUStatus() (string, bool) {
	infos, err := kernels.Probe()
	if err != nil {
		return fmt.Sprintf("none usable (%v)", err), false
	}
	s := infos[0].String()
	if len(infos) > 1 {
		s += fmt.Sprintf(" (uses GPU 0 of %d)", len(infos))
	}
	return s, true
}

func newGPU(p *pipeline.Plan) (pipeline.Engine, error) {
	eng, err := kernels.New(p)
	if err != nil {
		return nil, fmt.Errorf("GPU engine: %w", err)
	}
	return eng, nil
}
