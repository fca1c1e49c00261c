//go:build !cuda

package main

import (
	"errors"

	"github.com/zspool/zspool/pipeline"
)

// gpuBuilt says this binary has the GPU engine.
const gpuBuilt = false

var errNoGPUBuild = errors.New("this build has no GPU engine (build with -tags cuda; see README.md, \"The GPU engine\")")

// gpuStatus describes the GPU this process would use, and whether it can.
func gpuStatus() (string, bool) { return "not built in (build with -tags cuda)", false }

func newGPUEngine(*pipeline.Plan) (pipeline.Engine, error) { return nil, errNoGPUBuild }
