package kernels

import (
	"errors"
	"fmt"
)

// ErrUnsupported marks plans the GPU engine does not take (a codec it has
// no path for, a chunk too large for its encoder): engine.New falls back
// to the CPU engine under auto.
var ErrUnsupported = errors.New("not supported by the GPU engine")

// Info describes a GPU.
type Info struct {
	Ordinal      int
	Name         string
	Major, Minor int   // compute capability
	Memory       int64 // bytes
	SMs          int
	Driver       int // CUDA driver API version, e.g. 13000
}

func (i Info) String() string {
	return fmt.Sprintf("%s (GPU %d, sm_%d%d, %d SMs, %.1f GiB), CUDA driver %d.%d",
		i.Name, i.Ordinal, i.Major, i.Minor, i.SMs, float64(i.Memory)/(1<<30), i.Driver/1000, i.Driver%1000/10)
}

// CopyRates are pinned-memory copy bandwidths, bytes per second.
type CopyRates struct {
	H2D  float64 // host to device alone
	D2H  float64 // device to host alone
	Both float64 // both directions at once, their bytes summed
}

// DeviceReporter is an engine that names the GPU it runs on.
type DeviceReporter interface {
	Device() Info
}

// CopyMeasurer is an engine that can measure its pinned copy bandwidth,
// the ceiling of its host–device copies.
type CopyMeasurer interface {
	MeasureCopies(reps int) (CopyRates, error)
}
