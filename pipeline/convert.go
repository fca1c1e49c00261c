package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"time"

	"go.uber.org/zap"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/zarr"
)

// ConvertOptions are the per-run hooks of Convert.
type ConvertOptions struct {
	Version string
	// Progress, when set, is called after each epoch with the raw bytes
	// consumed so far.
	Progress func(done int64)
	// FirstLayer resumes at a level-0 shard layer; earlier layers (of
	// every level) are taken as stored. It must be a value LayerDone gave.
	FirstLayer int64
	// LayerDone is called whenever the point a restart could resume from
	// moves on: every level has committed every shard before level-0 layer
	// resume, and all levels start a layer there.
	LayerDone func(resume int64) error
	// Sealed records a layer's sealed objects (on a store whose writers
	// seal), layer after layer, before they are made visible; a restart
	// finishes them (Finisher) and may then resume at the last finished
	// one's Resume. Committed says they are visible and LayerDone covers
	// them: their records may go.
	Sealed    func(objs []SealedObject) error
	Committed func(objs []SealedObject)
	// Epochs, when set, supplies the level-0 epochs in place of reading
	// the raw file (bench places frames in the engine's staging buffers).
	// It must start at FirstLayer's first epoch.
	Epochs EpochSource
}

// EpochSource yields level-0 epochs in order. An EpochReader is one.
type EpochSource interface {
	Next() (Epoch, bool)
	Release(Epoch)
	Err() error
	Close()
}

// Result sums up one conversion.
type Result struct {
	BytesIn  int64
	BytesOut int64 // shard objects and metadata documents
	Elapsed  time.Duration
	Stages   []Stage
	// PeakShards is the most shard objects that were being written or
	// committed at once.
	PeakShards int
}

// Ratio is input over output bytes.
func (r *Result) Ratio() float64 {
	if r.BytesOut == 0 {
		return 0
	}
	return float64(r.BytesIn) / float64(r.BytesOut)
}

// Convert streams one acquisition through an engine into a sink: array
// documents first, then every shard layer in order, and the group document
// last — the commit point a reader can wait for. On failure, open shards
// are aborted and the group document is not written.
func Convert(ctx context.Context, log *zap.Logger, src *Source, p *Plan, eng Engine, sink Sink, opts ConvertOptions) (*Result, error) {
	start := time.Now()
	root := p.Root()
	if m := p.Manifest; m.OME == config.OMEAuto && !m.WritesOME() {
		log.Warn("the dimensions cannot be an OME-NGFF image: writing a plain Zarr v3 group (set ome: true in the manifest to refuse such acquisitions instead)",
			zap.String("root", root), zap.String("rule", config.OMERule(m.Dimensions)))
	}
	groupKey := path.Join(root, "zarr.json")
	// A group document left by an earlier run must not vouch for shards
	// this run is about to replace.
	if err := sink.Delete(ctx, groupKey); err != nil {
		return nil, fmt.Errorf("%s: %w", groupKey, err)
	}
	res := &Result{}
	docs, err := putArrayDocuments(ctx, p, sink, root)
	if err != nil {
		return nil, err
	}
	res.BytesOut += docs

	asm := newConvertAssembler(ctx, p, sink, opts)
	first := opts.FirstLayer * p.Levels[0].Grid.Shard[0]
	var staging [][]byte
	if st, ok := eng.(Stager); ok {
		staging = st.StagingBuffers()
	}
	rd := opts.Epochs
	if rd == nil {
		rd = openEpochs(ctx, log, src, p, first, staging)
	}
	defer rd.Close()
	read := NewMeter("read")
	log.Debug("convert start", zap.String("dataset", root), zap.Int64("epochs", p.Epochs()),
		zap.Int64("first_epoch", first), zap.Stringer("working_set", p.WorkingSet), zap.String("raw_epochs", epochsHow(rd)))

	res.BytesIn, err = encodeEpochs(ctx, eng, rd, asm, read, first*p.EpochBytes(), opts.Progress)
	if err == nil {
		// The group document is the commit point: every shard must be
		// committed and recorded first.
		err = asm.Wait()
	}
	if err != nil {
		asm.Abort()
		return nil, err
	}
	doc, err := putGroupDocument(ctx, p, src, sink, groupKey, opts.Version)
	if err != nil {
		return nil, err
	}
	res.BytesOut += asm.Written() + int64(doc)
	res.Elapsed = time.Since(start)
	res.Stages = append([]Stage{read.Snapshot()}, eng.Stages()...)
	res.Stages = append(res.Stages, asm.Stages()...)
	res.PeakShards = asm.PeakShards()
	return res, nil
}

// putArrayDocuments writes every level's array document, before any of
// its shards, and returns their bytes.
func putArrayDocuments(ctx context.Context, p *Plan, sink Sink, root string) (int64, error) {
	var n int64
	for _, l := range p.Levels {
		doc := p.ArraySpec(l).Document()
		key := path.Join(root, l.Path, "zarr.json")
		if err := sink.Put(ctx, key, doc); err != nil {
			return n, fmt.Errorf("%s: %w", key, err)
		}
		n += int64(len(doc))
	}
	return n, nil
}

// newConvertAssembler is the run's assembler, its hooks turning layer
// commits and seals into opts' resume points.
func newConvertAssembler(ctx context.Context, p *Plan, sink Sink, opts ConvertOptions) *Assembler {
	asm := NewAssembler(ctx, p, sink)
	asm.LayerDone = resumeTracker(p, opts.FirstLayer, opts.LayerDone)
	if opts.Sealed != nil {
		// The resume point each record reaches once it, and every record
		// before it, is visible: as LayerDone's, but counted at seals.
		sealedTo := opts.FirstLayer
		track := resumeTracker(p, opts.FirstLayer, func(r int64) error { sealedTo = r; return nil })
		asm.Sealed = func(level int, layer int64, objs []SealedObject) error {
			_ = track(level, layer)
			if len(objs) == 0 {
				return nil
			}
			for i := range objs {
				objs[i].Resume = sealedTo
			}
			return opts.Sealed(objs)
		}
	}
	asm.Committed = opts.Committed
	return asm
}

// openEpochs reads the raw file from epoch first on: into the engine's
// staging buffers when it has them, else mapped, so that the engine reads
// the file's cached pages where they are (read copies, where the file
// cannot be mapped).
func openEpochs(ctx context.Context, log *zap.Logger, src *Source, p *Plan, first int64, staging [][]byte) EpochSource {
	frames := p.Levels[0].Grid.Shape[0]
	if staging == nil {
		m, err := NewEpochMapper(ctx, src.Raw, src.RawName, first, frames, p.EpochFrames(), p.FrameBytes)
		if err == nil {
			return m
		}
		log.Debug("reading the raw file with copies", zap.Error(err))
	}
	return NewEpochReaderInto(ctx, src.Raw, src.RawName, first, frames, p.EpochFrames(), p.FrameBytes, staging)
}

// epochsHow says how rd gets the raw file's epochs, for the debug log.
func epochsHow(rd EpochSource) string {
	switch rd.(type) {
	case *EpochMapper:
		return "mapped"
	case *EpochReader:
		return "read"
	}
	return "supplied"
}

// encodeEpochs is the hot path: every epoch of rd through the engine and
// its chunk rows into the assembler, then the engine's flush. before is
// the raw bytes ahead of rd's first epoch (a resumed run's), which
// progress counts too; it returns the raw bytes it consumed. An engine
// that holds epochs keeps the latest one until it has taken the next.
func encodeEpochs(ctx context.Context, eng Engine, rd EpochSource, asm *Assembler, read *Meter, before int64,
	progress func(int64)) (in int64, err error) {
	h, hold := eng.(EpochHolder)
	hold = hold && h.HoldsEpochs()
	if hold {
		// A failed run leaves the engine reading an epoch it holds, which
		// the source unmaps once Convert returns.
		defer func() {
			if err != nil {
				h.Settle()
			}
		}()
	}
	var held *Epoch // the epoch the engine may still read
	for {
		ep, ok := rd.Next()
		if !ok {
			break
		}
		read.Add(int64(len(ep.Data)), ep.Read)
		outs, err := eng.Encode(ctx, ep)
		if err != nil {
			// The engine may still read this epoch and the one it held:
			// neither is released, and rd's Close lets go of them once
			// the engine has settled.
			return in, fmt.Errorf("epoch %d: %w", ep.Index, err)
		}
		n := int64(len(ep.Data))
		if hold {
			if held != nil {
				rd.Release(*held)
			}
			held = &ep
		} else {
			rd.Release(ep)
		}
		if err := addOutputs(ctx, asm, outs); err != nil {
			return in, err
		}
		in += n
		if progress != nil {
			progress(before + in)
		}
	}
	if err := rd.Err(); err != nil {
		return in, err
	}
	outs, err := eng.Flush(ctx)
	if held != nil {
		rd.Release(*held)
	}
	if err != nil {
		return in, fmt.Errorf("flush: %w", err)
	}
	return in, addOutputs(ctx, asm, outs)
}

// addOutputs hands an Encode's outputs to the assembler in order; after a
// failure, the rest give their lent bytes back.
func addOutputs(ctx context.Context, asm *Assembler, outs []LevelOutput) error {
	for i, o := range outs {
		if err := asm.Add(ctx, o); err != nil {
			releaseOutputs(outs[i+1:])
			return err
		}
	}
	return nil
}

// putGroupDocument writes the group document, the commit point, once every
// shard is committed, and returns its bytes. The commit point vouches for
// the metadata as well: a group that breaks OME-NGFF 0.5 is never written
// (it would be zspool's bug, so the job fails loudly rather than ship it).
func putGroupDocument(ctx context.Context, p *Plan, src *Source, sink Sink, groupKey, version string) (int, error) {
	doc, err := p.GroupDocument(Provenance{Version: version, Manifest: src.ManifestName, Data: src.RawName, Bytes: src.RawSize})
	if err != nil {
		return 0, err
	}
	if err := checkGroupDocument(doc); err != nil {
		return 0, fmt.Errorf("%s: %w", groupKey, err)
	}
	if err := sink.Put(ctx, groupKey, doc); err != nil {
		return 0, fmt.Errorf("%s: %w", groupKey, err)
	}
	return len(doc), nil
}

// resumeTracker turns per-level layer commits into resume points: the
// level-0 layer count below which every level is stored and at which every
// level starts a fresh shard layer (and a fresh pyramid row).
func resumeTracker(p *Plan, first int64, report func(int64) error) func(level int, layer int64) error {
	if report == nil {
		return nil
	}
	layerFrames := p.Levels[0].Grid.Shard[0] * p.EpochFrames()
	total := p.Levels[0].Grid.Shape[0]
	align := p.ResumeAlign()
	covered := make([]int64, len(p.Levels))
	for i := range covered {
		covered[i] = first * layerFrames
	}
	last := first
	return func(level int, layer int64) error {
		covered[level] = p.LayerFrames(level, layer)
		low := covered[0]
		for _, c := range covered[1:] {
			low = min(low, c)
		}
		var resume int64
		if low >= total {
			resume = ceilDiv(total, layerFrames)
		} else {
			resume = low / align * align / layerFrames
		}
		if resume <= last {
			return nil
		}
		last = resume
		return report(resume)
	}
}

// checkGroupDocument holds an OME group document to OME-NGFF 0.5's strict
// schema and rules; a plain group has nothing to hold.
func checkGroupDocument(doc []byte) error {
	var g zarr.GroupMetadata
	if err := json.Unmarshal(doc, &g); err != nil {
		return err
	}
	if _, ok := g.Attributes["ome"]; !ok {
		return nil
	}
	return zarr.CheckOMEAttributes(g.Attributes)
}
