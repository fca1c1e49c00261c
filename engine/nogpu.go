//go:build !cuda

package engine

import (
	"errors"

	"github.com/zspool/zspool/pipeline"
)

// GPUBuilt says this binary has the GPU engine.
const GPUBuilt = false

var (
	errNoGPUBuild  = errors.New("this build has no GPU engine (build with -tags cuda; see README.md, \"The GPU engine\")")
	errUnsupported = errors.New("unsupported")
)

// GPUStatus describes the GPU this process would use, and whether it can.
func GPUStatus() (string, bool) { return "not built in (build with -tags cuda)", false }

func newGPU(*pipeline.Plan, *Devices) (pipeline.Engine, error) { return nil, errNoGPUBuild }

// Devices keeps a GPU context open across plans; this build has none to
// keep.
type Devices struct{}

// Close releases nothing.
func (*Devices) Close() error { return nil }
