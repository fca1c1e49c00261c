package zarr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"

	"github.com/klauspost/compress/zstd"
)

// ErrNotFound is returned by a Store for a key that holds no object.
var ErrNotFound = errors.New("object not found")

// Store is what the reader needs of a destination: whole reads for small
// documents, ranged reads for shard indexes and chunks.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, error)
	GetRange(ctx context.Context, key string, off, n int64) ([]byte, error)
	Size(ctx context.Context, key string) (int64, error)
}

// Dataset is an opened OME-Zarr dataset.
type Dataset struct {
	Root   string // key prefix of the dataset, e.g. "acq.ome.zarr"
	Group  GroupMetadata
	OME    OME
	Levels []*Array
	// Plain is set for a plain Zarr v3 group, one without OME metadata
	// (written when the manifest's dimensions cannot be an OME image): its
	// levels are the arrays 0, 1, … under the root.
	Plain bool
}

// maxPlainLevels bounds the search for a plain group's levels.
const maxPlainLevels = 64

// Array is one opened level.
type Array struct {
	store    Store
	Path     string // key prefix of the array
	Meta     ArrayMetadata
	Grid     Grid
	DataType string
	Elem     int
	Endian   string
	Codec    string // "zstd" or "none"
	dec      *zstd.Decoder
}

// Open reads the group document at root and opens every level it lists.
func Open(ctx context.Context, s Store, root string) (*Dataset, error) {
	raw, err := s.Get(ctx, path.Join(root, "zarr.json"))
	if err != nil {
		return nil, fmt.Errorf("dataset %s: group zarr.json: %w", root, err)
	}
	ds := &Dataset{Root: root}
	if err := json.Unmarshal(raw, &ds.Group); err != nil {
		return nil, fmt.Errorf("dataset %s: group zarr.json: %w", root, err)
	}
	if ds.Group.ZarrFormat != 3 || ds.Group.NodeType != "group" {
		return nil, fmt.Errorf("dataset %s: zarr.json is not a Zarr v3 group (zarr_format %d, node_type %q)", root, ds.Group.ZarrFormat, ds.Group.NodeType)
	}
	omeRaw, ok := ds.Group.Attributes["ome"]
	if !ok {
		ds.Plain = true
		for i := range maxPlainLevels {
			p := path.Join(root, strconv.Itoa(i))
			if _, err := s.Size(ctx, path.Join(p, "zarr.json")); errors.Is(err, ErrNotFound) {
				break
			}
			a, err := OpenArray(ctx, s, p)
			if err != nil {
				return nil, fmt.Errorf("dataset %s: level %d: %w", root, i, err)
			}
			ds.Levels = append(ds.Levels, a)
		}
		if len(ds.Levels) == 0 {
			return nil, fmt.Errorf("dataset %s: a group with neither attributes.ome nor an array 0", root)
		}
		return ds, nil
	}
	if err := json.Unmarshal(omeRaw, &ds.OME); err != nil {
		return nil, fmt.Errorf("dataset %s: attributes.ome: %w", root, err)
	}
	if ds.OME.Version != "0.5" || len(ds.OME.Multiscales) != 1 {
		return nil, fmt.Errorf("dataset %s: attributes.ome: want version 0.5 with one multiscale, got %q with %d", root, ds.OME.Version, len(ds.OME.Multiscales))
	}
	for i, d := range ds.OME.Multiscales[0].Datasets {
		a, err := OpenArray(ctx, s, path.Join(root, d.Path))
		if err != nil {
			return nil, fmt.Errorf("dataset %s: level %d: %w", root, i, err)
		}
		ds.Levels = append(ds.Levels, a)
	}
	if len(ds.Levels) == 0 {
		return nil, fmt.Errorf("dataset %s: multiscale lists no datasets", root)
	}
	return ds, nil
}

// OpenArray reads and checks one array's zarr.json. It accepts exactly the
// layout zspool writes: sharding_indexed over bytes (+ zstd), index at the
// end with bytes-little + crc32c.
func OpenArray(ctx context.Context, s Store, prefix string) (*Array, error) {
	raw, err := s.Get(ctx, path.Join(prefix, "zarr.json"))
	if err != nil {
		return nil, fmt.Errorf("%s/zarr.json: %w", prefix, err)
	}
	a := &Array{store: s, Path: prefix}
	if err := json.Unmarshal(raw, &a.Meta); err != nil {
		return nil, fmt.Errorf("%s/zarr.json: %w", prefix, err)
	}
	m := a.Meta
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s/zarr.json: %s", prefix, fmt.Sprintf(format, args...))
	}
	if m.ZarrFormat != 3 || m.NodeType != "array" {
		return nil, bad("not a Zarr v3 array")
	}
	a.DataType = m.DataType
	a.Elem = DType(m.DataType).Size()
	if a.Elem == 0 {
		return nil, bad("data_type %q is not supported", m.DataType)
	}
	if m.ChunkGrid.Name != "regular" || m.ChunkKeyEncoding.Name != "default" {
		return nil, bad("want a regular chunk grid and default key encoding")
	}
	var grid regularGrid
	if err := json.Unmarshal(m.ChunkGrid.Configuration, &grid); err != nil {
		return nil, bad("chunk_grid: %v", err)
	}
	var keys keyEncoding
	if err := json.Unmarshal(m.ChunkKeyEncoding.Configuration, &keys); err != nil || keys.Separator != "/" {
		return nil, bad("chunk_key_encoding: want separator \"/\"")
	}
	if len(m.Codecs) != 1 || m.Codecs[0].Name != "sharding_indexed" {
		return nil, bad("want exactly one codec, sharding_indexed")
	}
	var sh ShardingConfig
	if err := json.Unmarshal(m.Codecs[0].Configuration, &sh); err != nil {
		return nil, bad("sharding_indexed: %v", err)
	}
	if a.Grid, err = shardGrid(m, grid, sh); err != nil {
		return nil, bad("%v", err)
	}
	if a.Endian, a.Codec, err = innerCodecs(sh); err != nil {
		return nil, bad("%v", err)
	}
	if a.Codec == "zstd" {
		a.dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<31))
		if err != nil {
			return nil, fmt.Errorf("%s: zstd decoder: %w", prefix, err)
		}
	}
	return a, nil
}

// shardGrid is the array's grid: its shape, the inner chunk shape, and
// the chunks a shard holds along each dimension (the chunk grid's shape,
// a shard, over the sharding codec's chunk shape).
func shardGrid(m ArrayMetadata, grid regularGrid, sh ShardingConfig) (Grid, error) {
	r := len(m.Shape)
	if r == 0 || len(grid.ChunkShape) != r || len(sh.ChunkShape) != r {
		return Grid{}, fmt.Errorf("shape, chunk_grid and chunk_shape ranks differ")
	}
	if m.DimensionNames != nil && len(m.DimensionNames) != r {
		return Grid{}, fmt.Errorf("dimension_names has %d names for rank %d", len(m.DimensionNames), r)
	}
	g := Grid{Shape: m.Shape, Chunk: sh.ChunkShape, Shard: make([]int64, r)}
	for d := range r {
		if sh.ChunkShape[d] < 1 || grid.ChunkShape[d]%sh.ChunkShape[d] != 0 {
			return Grid{}, fmt.Errorf("dim %d: shard shape %d is not a multiple of chunk shape %d", d, grid.ChunkShape[d], sh.ChunkShape[d])
		}
		g.Shard[d] = grid.ChunkShape[d] / sh.ChunkShape[d]
	}
	if err := g.Validate(); err != nil {
		return Grid{}, err
	}
	return g, nil
}

// innerCodecs checks the sharding codec's index and inner codecs, the
// only layout zspool writes and reads, and returns the chunks' byte order
// and their compression ("none" or "zstd").
func innerCodecs(sh ShardingConfig) (endian, codec string, err error) {
	if sh.IndexLocation != "end" || len(sh.IndexCodecs) != 2 || sh.IndexCodecs[0].Name != "bytes" || sh.IndexCodecs[1].Name != "crc32c" {
		return "", "", fmt.Errorf("want index_codecs [bytes, crc32c] at the end")
	}
	if len(sh.Codecs) == 0 || sh.Codecs[0].Name != "bytes" {
		return "", "", fmt.Errorf("inner codecs must start with bytes")
	}
	var bc bytesConfig
	if len(sh.Codecs[0].Configuration) > 0 {
		if err := json.Unmarshal(sh.Codecs[0].Configuration, &bc); err != nil {
			return "", "", fmt.Errorf("bytes codec: %v", err)
		}
	}
	endian = bc.Endian
	if endian == "" {
		endian = "little"
	}
	switch {
	case len(sh.Codecs) == 1:
		return endian, "none", nil
	case len(sh.Codecs) == 2 && sh.Codecs[1].Name == "zstd":
		return endian, "zstd", nil
	}
	return "", "", fmt.Errorf("inner codecs: want [bytes] or [bytes, zstd]")
}

// ChunkBytes is the decoded size of one padded chunk.
func (a *Array) ChunkBytes() int64 { return a.Grid.ChunkElems() * int64(a.Elem) }

// ShardKey is the full key of shard g.
func (a *Array) ShardKey(g []int64) string { return path.Join(a.Path, ShardKey(g)) }

// ReadIndex reads and checks shard g's index. It returns the entries and the
// object's size.
func (a *Array) ReadIndex(ctx context.Context, g []int64) ([]Entry, int64, error) {
	key := a.ShardKey(g)
	size, err := a.store.Size(ctx, key)
	if err != nil {
		return nil, 0, fmt.Errorf("shard %s: %w", key, err)
	}
	slots := a.Grid.SlotsPerShard()
	isz := IndexSize(slots)
	if size < isz {
		return nil, size, fmt.Errorf("shard %s: %d bytes, shorter than its %d-byte index", key, size, isz)
	}
	b, err := a.store.GetRange(ctx, key, size-isz, isz)
	if err != nil {
		return nil, size, fmt.Errorf("shard %s: index: %w", key, err)
	}
	entries, err := DecodeIndex(b, slots, size)
	if err != nil {
		return nil, size, fmt.Errorf("shard %s: %w", key, err)
	}
	// A slot whose chunk lies outside the array must be absent: a reader
	// would never look at it, so data there is a writer bug.
	var c []int64
	for s, e := range entries {
		var in bool
		if c, in = a.Grid.SlotChunk(g, int64(s), c); !in && e.Present() {
			return nil, size, fmt.Errorf("shard %s: slot %d (chunk %v) lies outside the array but holds %d bytes", key, s, c, e.NBytes)
		}
	}
	return entries, size, nil
}

// DecodeChunk turns a stored chunk into its padded, decoded bytes, checking
// the decoded length. dst is reused when large enough.
func (a *Array) DecodeChunk(stored, dst []byte) ([]byte, error) {
	want := a.ChunkBytes()
	if a.Codec == "none" {
		if int64(len(stored)) != want {
			return nil, fmt.Errorf("raw chunk of %d bytes, want %d", len(stored), want)
		}
		return append(dst[:0], stored...), nil
	}
	out, err := a.dec.DecodeAll(stored, dst[:0])
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	if int64(len(out)) != want {
		return nil, fmt.Errorf("chunk decodes to %d bytes, want %d", len(out), want)
	}
	return out, nil
}

// ReadChunk returns chunk c decoded and padded; an absent chunk is fill (0).
func (a *Array) ReadChunk(ctx context.Context, c []int64) ([]byte, error) {
	// Outside the chunk grid, Slot and ShardOf would land on an existing
	// shard's padding slot (silently reading fill) or index out of range.
	if len(c) != a.Grid.Rank() {
		return nil, fmt.Errorf("chunk %v: rank %d, array rank %d", c, len(c), a.Grid.Rank())
	}
	for d, v := range c {
		if v < 0 || v >= a.Grid.Chunks(d) {
			return nil, fmt.Errorf("chunk %v: dim %d outside the chunk grid [0, %d)", c, d, a.Grid.Chunks(d))
		}
	}
	g := a.Grid.ShardOf(c, nil)
	entries, _, err := a.ReadIndex(ctx, g)
	if err != nil {
		return nil, err
	}
	e := entries[a.Grid.Slot(c)]
	if !e.Present() {
		return make([]byte, a.ChunkBytes()), nil
	}
	stored, err := a.store.GetRange(ctx, a.ShardKey(g), int64(e.Offset), int64(e.NBytes))
	if err != nil {
		return nil, fmt.Errorf("chunk %v: %w", c, err)
	}
	out, err := a.DecodeChunk(stored, nil)
	if err != nil {
		return nil, fmt.Errorf("chunk %v in shard %s: %w", c, a.ShardKey(g), err)
	}
	return out, nil
}

// EpochReader reads an array back one chunk row of dim 0 at a time, the way
// it was written, keeping only the current shard layer's indexes.
type EpochReader struct {
	a       *Array
	layer   int64
	indexes map[string][]Entry
	buf     []byte
	zero    []byte
	decoded int64
}

// NewEpochReader starts reading a at its first epoch.
func (a *Array) NewEpochReader() *EpochReader {
	return &EpochReader{a: a, layer: -1}
}

// FrameBytes is the size of one dim-0 slice of the array.
func (a *Array) FrameBytes() int64 {
	n := int64(a.Elem)
	for _, s := range a.Grid.Shape[1:] {
		n *= s
	}
	return n
}

// Epochs is the number of chunk rows along dim 0.
func (a *Array) Epochs() int64 { return a.Grid.Chunks(0) }

// ReadEpoch decodes chunk row e into dst (dense, C order, true shape) and
// returns the filled part of dst.
func (r *EpochReader) ReadEpoch(ctx context.Context, e int64, dst []byte) ([]byte, error) {
	a := r.a
	if e < 0 || e >= a.Epochs() {
		return nil, fmt.Errorf("epoch %d outside [0, %d)", e, a.Epochs())
	}
	frames := min(a.Grid.Chunk[0], a.Grid.Shape[0]-e*a.Grid.Chunk[0])
	need := frames * a.FrameBytes()
	if int64(cap(dst)) < need {
		dst = make([]byte, need)
	}
	dst = dst[:need]
	if layer := e / a.Grid.Shard[0]; layer != r.layer {
		r.layer, r.indexes = layer, map[string][]Entry{}
	}
	extent := make([]int64, a.Grid.Rank())
	extent[0] = 1
	for d := 1; d < len(extent); d++ {
		extent[d] = a.Grid.Chunks(d)
	}
	err := ForEach(extent, func(c0 []int64) error {
		c := slices.Clone(c0)
		c[0] = e
		g := a.Grid.ShardOf(c, nil)
		key := a.ShardKey(g)
		entries, ok := r.indexes[key]
		if !ok {
			var err error
			if entries, _, err = a.ReadIndex(ctx, g); err != nil {
				return err
			}
			r.indexes[key] = entries
		}
		box := a.Grid.EpochBox(c, frames, a.Elem)
		ent := entries[a.Grid.Slot(c)]
		if !ent.Present() {
			if int64(len(r.zero)) != a.ChunkBytes() {
				r.zero = make([]byte, a.ChunkBytes())
			}
			box.Gather(r.zero, dst)
			return nil
		}
		stored, err := a.store.GetRange(ctx, key, int64(ent.Offset), int64(ent.NBytes))
		if err != nil {
			return fmt.Errorf("chunk %v: %w", c, err)
		}
		if r.buf, err = a.DecodeChunk(stored, r.buf); err != nil {
			return fmt.Errorf("chunk %v in shard %s: %w", c, key, err)
		}
		r.decoded++
		box.Gather(r.buf, dst)
		return nil
	})
	return dst, err
}

// ReadAll decodes the whole array into one dense buffer. Tests and small
// arrays only: it holds everything in memory.
func (a *Array) ReadAll(ctx context.Context) ([]byte, error) {
	out := make([]byte, 0, a.Grid.Shape[0]*a.FrameBytes())
	r := a.NewEpochReader()
	var buf []byte
	for e := range a.Epochs() {
		var err error
		if buf, err = r.ReadEpoch(ctx, e, buf); err != nil {
			return nil, err
		}
		out = append(out, buf...)
	}
	return out, nil
}
