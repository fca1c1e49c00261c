package zarr

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// Report sums up a verification.
type Report struct {
	Levels      int
	Shards      int64
	Chunks      int64 // chunks decoded (present ones)
	RawCompared int64 // level-0 bytes compared with the raw file
}

// Verify checks a dataset end to end: the group's OME block against every
// level's zarr.json, every shard's presence and index crc32c, every chunk's
// decoding to its exact size. With raw (the acquisition's raw file), level
// 0 must equal it byte for byte. progress, when set, gets level-0 bytes done.
func Verify(ctx context.Context, ds *Dataset, raw io.ReaderAt, progress func(int64)) (*Report, error) {
	rep := &Report{Levels: len(ds.Levels)}
	if err := checkOME(ds); err != nil {
		return rep, err
	}
	for li, a := range ds.Levels {
		rep.Shards += a.Grid.ShardCount()
		r := a.NewEpochReader()
		var buf, want []byte
		var done int64
		for e := range a.Epochs() {
			var err error
			if buf, err = r.ReadEpoch(ctx, e, buf); err != nil {
				return rep, fmt.Errorf("level %d: %w", li, err)
			}
			if li == 0 && raw != nil {
				if int64(cap(want)) < int64(len(buf)) {
					want = make([]byte, len(buf))
				}
				want = want[:len(buf)]
				// io.ReaderAt may return io.EOF with a full read that ends
				// at the end of the input: only a short read is an error.
				if n, err := raw.ReadAt(want, done); n < len(want) {
					if err == nil {
						err = io.ErrUnexpectedEOF
					}
					if err == io.EOF || err == io.ErrUnexpectedEOF {
						return rep, fmt.Errorf("the raw file is shorter than level 0: it ends at byte %d, level 0 holds %d bytes", done+int64(n), a.Grid.Shape[0]*a.FrameBytes())
					}
					return rep, fmt.Errorf("raw file at byte %d: %w", done+int64(n), err)
				}
				if !bytes.Equal(buf, want) {
					i := firstDiff(buf, want)
					return rep, fmt.Errorf("level 0 differs from the raw file at byte %d (epoch %d): stored %#02x, raw %#02x", done+int64(i), e, buf[i], want[i])
				}
				rep.RawCompared += int64(len(buf))
			}
			done += int64(len(buf))
			if li == 0 && progress != nil {
				progress(done)
			}
		}
		rep.Chunks += r.decoded
	}
	if raw != nil {
		// The raw file must not run on past the array.
		var one [1]byte
		if n, _ := raw.ReadAt(one[:], rep.RawCompared); n > 0 {
			return rep, fmt.Errorf("raw file is longer than level 0 (%d bytes)", rep.RawCompared)
		}
	}
	return rep, nil
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// checkOME holds the group's metadata to OME-NGFF 0.5 (strict_image
// schema and the spec's rules beside it) and to what OME-Zarr readers rely
// on: one axis per dim, dimension_names equal to the axis names, one scale
// per dataset of the array's rank, levels from high to low resolution. A
// plain Zarr v3 group (no OME) has only its levels to check.
func checkOME(ds *Dataset) error {
	if ds.Plain {
		return checkLevelsShrink(ds, func(i int) string { return strconv.Itoa(i) })
	}
	if err := CheckOMEAttributes(ds.Group.Attributes); err != nil {
		return err
	}
	ms := ds.OME.Multiscales[0]
	var names []string
	for _, ax := range ms.Axes {
		names = append(names, ax.Name)
	}
	for i, a := range ds.Levels {
		d := ms.Datasets[i]
		if len(a.Grid.Shape) != len(ms.Axes) {
			return fmt.Errorf("level %q: rank %d, but the multiscale has %d axes", d.Path, len(a.Grid.Shape), len(ms.Axes))
		}
		if !slices.Equal(a.Meta.DimensionNames, names) {
			return fmt.Errorf("level %q: dimension_names %v differ from the axes %v", d.Path, a.Meta.DimensionNames, names)
		}
		if ts := d.CoordinateTransformations; len(ts) == 0 || ts[0].Type != "scale" || len(ts[0].Scale) != len(names) {
			return fmt.Errorf("level %q: want a scale transform of length %d first", d.Path, len(names))
		}
	}
	if err := checkOmero(ds); err != nil {
		return err
	}
	return checkLevelsShrink(ds, func(i int) string { return ms.Datasets[i].Path })
}

// checkLevelsShrink holds each level to being smaller than the one before.
func checkLevelsShrink(ds *Dataset, name func(int) string) error {
	for i, a := range ds.Levels {
		if i > 0 {
			prev := ds.Levels[i-1].Grid.Shape
			smaller := false
			for k, s := range a.Grid.Shape {
				if s > prev[k] {
					return fmt.Errorf("level %q: dim %d grows from %d to %d", name(i), k, prev[k], s)
				}
				smaller = smaller || s < prev[k]
			}
			if !smaller {
				return fmt.Errorf("level %q: not smaller than the level before it", name(i))
			}
		}
	}
	return nil
}

// checkOmero holds the omero block, when there is one, to the channel
// axis: one entry per channel.
func checkOmero(ds *Dataset) error {
	if ds.OME.Omero == nil {
		return nil
	}
	for k, ax := range ds.OME.Multiscales[0].Axes {
		if ax.Type == "channel" {
			if n := int64(len(ds.OME.Omero.Channels)); n != ds.Levels[0].Grid.Shape[k] {
				return fmt.Errorf("omero: %d channels for the %d of axis %s", n, ds.Levels[0].Grid.Shape[k], ax.Name)
			}
			return nil
		}
	}
	return fmt.Errorf("omero: channels, but no axis of type channel")
}
