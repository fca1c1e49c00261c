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
// mix: gaussian, uniform and constant frames in turn) to path, generating
// frames in parallel but writing them in order.
func writeSynthetic(ctx context.Context, path string, frames, h, w int64, progress func(int64)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	frameBytes := h * w * 2
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
				fr := base + i
				synth.FillFrame(bufs[i], synth.Mixed(fr), uint64(fr))
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
