package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/zspool/zspool/internal/synth"
)

// writeSynthetic writes frames of h×w uint16 camera-like data (the bench
// mix: gaussian, uniform and constant frames in turn) to path.
func writeSynthetic(ctx context.Context, path string, frames, h, w int64, progress func(int64)) error {
	return writeFrames(ctx, path, frames, h*w*2, func(dst []byte, t int64) { synth.FillFrame(dst, synth.Mixed(t), uint64(t)) }, progress)
}

// frameSource is what bench --data names: how to make frame t.
type frameSource struct {
	name, describe string
	dtype          string
	elem           int
	fill           func(dst []byte, t int64) // nil for a file
	file           string
}

// dataSets are the sets bench --data makes, as its errors name them.
const dataSets = "camera, dim, flat, 8bit, 8bit-saturated"

// newFrameSource reads --data for frames of side×side pixels.
func newFrameSource(data string, side int64) (*frameSource, error) {
	w := int(side)
	cam := func(c *synth.Camera, describe string) *frameSource {
		dtype := "uint16"
		if c.ElemSize() == 1 {
			dtype = "uint8"
		}
		return &frameSource{name: c.Name, describe: describe, dtype: dtype, elem: c.ElemSize(), fill: c.Frame}
	}
	switch data {
	case "camera", "bright":
		return cam(synth.CameraBright(w, w), "camera: bright cells, shot and read noise, 100 ADU offset, drift, bleaching, 12-bit"), nil
	case "dim":
		return cam(synth.CameraDim(w, w), "camera: dim sparse signal a few photons over a 100 ADU offset, 12-bit"), nil
	case "flat":
		return cam(synth.CameraFlat(w, w), "camera: shot-noise-limited flat field, 12-bit"), nil
	case "8bit":
		return cam(synth.Camera8(w, w), "camera: cells on a dark field, 8-bit"), nil
	case "8bit-saturated":
		return cam(synth.Camera8Saturated(w, w), "camera: cells clipped at 255 on a dark field, 8-bit"), nil
	case "mix":
		return &frameSource{name: "mix", describe: "the bench mix: gaussian, uniform and constant 12-bit frames in turn", dtype: "uint16", elem: 2,
			fill: func(dst []byte, t int64) { synth.FillFrame(dst, synth.Mixed(t), uint64(t)) }}, nil
	case "":
		return nil, fmt.Errorf("empty: want %s, mix or a raw file", dataSets)
	}
	if _, err := os.Stat(data); err != nil {
		return nil, fmt.Errorf("%q is not %s or mix, nor a raw file: %w", data, dataSets, err)
	}
	return &frameSource{name: filepath.Base(data), describe: "frames of " + data, dtype: "uint16", elem: 2, file: data}, nil
}

// writeFrames writes frames frames of frameBytes, frame t made by fill, to
// path: generated in parallel, written in order.
func writeFrames(ctx context.Context, path string, frames, frameBytes int64, fill func(dst []byte, t int64), progress func(int64)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	workers := int64(runtime.GOMAXPROCS(0))
	bufs := make([][]byte, workers)
	for i := range bufs {
		bufs[i] = make([]byte, frameBytes)
	}
	for base := int64(0); base < frames; base += workers {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(workers, frames-base)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fill(bufs[i], base+i)
			}()
		}
		wg.Wait()
		for i := range n {
			if _, err := f.Write(bufs[i]); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		if progress != nil {
			progress((base + n) * frameBytes)
		}
	}
	return f.Close()
}

// writeManifest writes the manifest of a synthetic t×y×x uint16 stack.
func writeManifest(path, data, name string, h, w, chunk int64, codec string, level int) error {
	m := map[string]any{
		"version": 1, "data": filepath.Base(data), "dtype": "uint16", "name": name,
		"dimensions": []map[string]any{
			{"name": "t", "type": "time", "size": 0, "chunk": 1},
			{"name": "y", "type": "space", "size": h, "chunk": min(chunk, h), "unit": "micrometer", "scale": 0.65},
			{"name": "x", "type": "space", "size": w, "chunk": min(chunk, w), "unit": "micrometer", "scale": 0.65},
		},
		"compression": map[string]any{"codec": codec, "level": level},
		"attributes":  map[string]any{"instrument": "zspool synthetic camera"},
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
