//go:build cuda

package engine

import (
	"fmt"
	"sync"

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

func newGPU(p *pipeline.Plan, devs *Devices) (pipeline.Engine, error) {
	var eng *kernels.Engine
	var err error
	if devs == nil {
		eng, err = kernels.New(p)
	} else {
		var dev *kernels.Device
		if dev, err = devs.gpu(); err == nil {
			eng, err = kernels.NewEngine(dev, p)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("GPU engine: %w", err)
	}
	return eng, nil
}

// Devices keeps the GPU's context — and the kernels loaded into it — open
// across plans, so that a daemon makes them once and not per job. The
// zero value is ready; Close releases what it opened. Each engine still
// allocates its own buffers for its plan.
type Devices struct {
	mu  sync.Mutex
	dev *kernels.Device
}

func (d *Devices) gpu() (*kernels.Device, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dev == nil {
		dev, err := kernels.Open(0)
		if err != nil {
			return nil, err
		}
		d.dev = dev
	}
	return d.dev, nil
}

// Close closes the GPU context, if one was opened. Every engine built on
// it must be closed first.
func (d *Devices) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dev == nil {
		return nil
	}
	err := d.dev.Close()
	d.dev = nil
	return err
}
