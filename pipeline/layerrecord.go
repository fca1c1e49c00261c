package pipeline

import "errors"

// layerRecord is one finished layer on its way to the journal: the gates
// it waits for (the level's previous layer's seals, and its LayerDone) and
// the ones it opens (its own, and its shards' commits).
type layerRecord struct {
	level          int
	layer          int64
	size           int64
	sealGate, gate <-chan struct{}
	recorded       chan struct{} // this layer's seals are recorded: its shards may commit
	sealed, done   chan struct{} // for the next layer: seals recorded, LayerDone called
	slots          chan struct{} // the level's layers in flight: one is given back once the shards hold no memory
}

// record takes a layer to the journal: once every shard is sealed (or, on
// a store that does not seal, committed) and the level's previous layer's
// seals are recorded, it records this layer's seals (Sealed) and lets its
// sealed shards commit; once they are committed and the previous layer is
// done, it reports this one done (LayerDone). Seals run ahead of commits,
// so several layers commit at once, while LayerDone stays in order and
// after every commit — what it records is always visible.
func (a *Assembler) record(shards []*openShard, lr layerRecord) error {
	var errs []error
	var seals []SealedObject
	var sealedShards []*openShard
	for _, sh := range shards {
		o := <-sh.sealed
		switch {
		case o.err != nil:
			errs = append(errs, o.err)
		case o.obj != nil:
			seals = append(seals, *o.obj)
			sealedShards = append(sealedShards, sh)
		}
	}
	// Every shard is sealed, committed or failed: its queue is drained
	// and its buffers are back, so the next layer may open.
	<-lr.slots
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := a.await(lr.sealGate); err != nil {
		return err
	}
	// Whether the seals go on record is decided under doneMu, and so is
	// a stopped assembler's writer's choice to abort its sealed shard
	// (commitSealed): a seal recorded while its writer saw the failure
	// would otherwise be aborted after the journal vouched for it. A
	// layer without seals (every shard committed, on a store that does
	// not seal) goes on to LayerDone as before.
	a.doneMu.Lock()
	if err := a.ctx.Err(); err != nil && len(seals) > 0 {
		a.doneMu.Unlock()
		return a.stopped(err) // the writers abort the unrecorded seals
	}
	if a.Sealed != nil {
		if err := a.Sealed(lr.level, lr.layer, seals); err != nil {
			a.doneMu.Unlock()
			// Unrecorded seals are aborted by their writers once they
			// see the failure.
			return err
		}
	}
	// From here the seals are on record: their commits go ahead whatever
	// happens next.
	close(lr.recorded)
	a.doneMu.Unlock()
	close(lr.sealed)
	for _, sh := range sealedShards {
		if err := <-sh.result; err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := a.await(lr.gate); err != nil {
		return err
	}
	a.mu.Lock()
	a.written += lr.size
	a.mu.Unlock()
	a.doneMu.Lock()
	defer a.doneMu.Unlock()
	if a.LayerDone != nil {
		if err := a.LayerDone(lr.level, lr.layer); err != nil {
			return err
		}
	}
	// Only now may the seals' records go: the journal's resume point
	// covers them.
	if len(seals) > 0 && a.Committed != nil {
		a.Committed(seals)
	}
	close(lr.done)
	return nil
}

// await waits for a gate to open, or for the assembler to stop.
func (a *Assembler) await(gate <-chan struct{}) error {
	select {
	case <-gate:
		return nil
	case <-a.ctx.Done():
		return a.stopped(a.ctx.Err())
	}
}
