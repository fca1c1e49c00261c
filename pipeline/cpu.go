package pipeline

import (
	"context"
	"fmt"
)

// CPU is the reference engine: workers scatter each chunk of an epoch out
// of the raw bytes into their scratch buffer and compress it.
type CPU struct {
	plan   *Plan
	layout *RowLayout
	comp   *Compressor
}

// NewCPU builds the CPU engine for a plan.
func NewCPU(p *Plan) (*CPU, error) {
	if len(p.Levels) > 1 {
		return nil, fmt.Errorf("multiscale: %d levels planned, but this build writes level 0 only; drop \"multiscale\" from the manifest", len(p.Levels))
	}
	l0 := p.Levels[0]
	ll := NewRowLayout(l0.Grid)
	comp, err := NewCompressor(p, p.ChunkBytes(l0), len(ll.Coords), "scatter")
	if err != nil {
		return nil, err
	}
	return &CPU{plan: p, layout: ll, comp: comp}, nil
}

// Encode scatters and compresses every chunk of the epoch in parallel, then
// groups the results by shard in slot order.
func (c *CPU) Encode(ctx context.Context, e Epoch) ([]LevelOutput, error) {
	ll, g := c.layout, c.layout.Grid
	err := c.comp.Run(ctx, len(ll.Coords), int64(len(e.Data)), func(i int, buf []byte) []byte {
		box := g.EpochBox(ll.Coords[i], e.Frames, c.plan.Elem)
		if e.Frames < g.Chunk[0] || box.Padded() {
			clear(buf)
		}
		box.Scatter(e.Data, buf)
		return buf
	})
	if err != nil {
		return nil, err
	}
	return []LevelOutput{ll.Group(0, e.Index, c.comp.Stored)}, nil
}

// Flush has nothing to emit: level 0 only holds whole epochs.
func (c *CPU) Flush(context.Context) ([]LevelOutput, error) { return nil, nil }

// Stages reports scatter and compress.
func (c *CPU) Stages() []Stage { return c.comp.Stages() }

// Close releases the encoders.
func (c *CPU) Close() error {
	c.comp.Close()
	return nil
}
