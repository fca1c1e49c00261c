package pipeline

import (
	"fmt"
	"time"
)

// writePiece writes a piece's bytes, block after block or chunk after
// chunk.
func writePiece(w ObjectWriter, pc piece) error {
	for _, ch := range pc.chunks {
		if ch.Data == nil {
			continue
		}
		if _, err := w.Write(ch.Data); err != nil {
			return err
		}
	}
	left := pc.n
	for _, b := range pc.blocks {
		n := min(left, len(b))
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		left -= n
	}
	if len(pc.index) > 0 {
		_, err := w.Write(pc.index)
		return err
	}
	return nil
}

// write is a shard's writer: its queued rows and index, in order. A
// shard whose writer can seal is sealed at once, and committed once its
// layer's seals are recorded; any other shard is committed once the
// level's previous layer is recorded. Anything that stops the assembler
// before then aborts the shard instead.
func (a *Assembler) write(sh *openShard, gate, recorded <-chan struct{}) {
	defer a.wg.Done()
	defer func() {
		a.mu.Lock()
		a.inFlight--
		a.mu.Unlock()
	}()
	err := a.drain(sh)
	if err == nil && a.ctx.Err() == nil {
		if s, ok := sh.w.(Sealer); ok {
			start := time.Now()
			obj, sealed, serr := s.Seal()
			a.store.Add(0, time.Since(start))
			switch {
			case serr != nil:
				err = fmt.Errorf("shard %s: %w", sh.key, serr)
			case sealed:
				sh.sealed <- sealOutcome{obj: &obj}
				sh.result <- a.commitSealed(sh, recorded)
				return
			}
		}
	}
	if err == nil {
		select {
		case <-gate:
		case <-a.ctx.Done():
		}
	}
	if err == nil && a.ctx.Err() == nil {
		err = a.commit(sh)
	} else {
		_ = sh.w.Abort()
		if err == nil {
			err = a.stopped(a.ctx.Err())
		}
	}
	sh.sealed <- sealOutcome{err: err}
}

// drain writes the shard's queued pieces; after a failure it only gives
// their memory back.
func (a *Assembler) drain(sh *openShard) error {
	var err error
	for pc := range sh.queue {
		if err == nil && a.ctx.Err() == nil {
			start := time.Now()
			if werr := writePiece(sh.w, pc); werr != nil {
				err = fmt.Errorf("shard %s: %w", sh.key, werr)
			}
			a.store.Add(int64(pc.n+len(pc.index)), time.Since(start))
		}
		a.putBack(pc)
	}
	return err
}

// commitSealed commits a sealed shard once its layer's seals are recorded.
// A recorded seal is committed even if the assembler fails meanwhile: the
// journal counts it as stored. Before that, a failure aborts it.
func (a *Assembler) commitSealed(sh *openShard, recorded <-chan struct{}) error {
	select {
	case <-recorded:
	case <-a.ctx.Done():
		// record puts seals on record under doneMu, and only while the
		// assembler runs: under it, recorded is final.
		a.doneMu.Lock()
		select {
		case <-recorded:
			a.doneMu.Unlock()
		default:
			a.doneMu.Unlock()
			_ = sh.w.Abort()
			return a.stopped(a.ctx.Err())
		}
	}
	return a.commit(sh)
}

func (a *Assembler) commit(sh *openShard) error {
	a.commits <- struct{}{}
	defer func() { <-a.commits }()
	start := time.Now()
	err := sh.w.Commit()
	a.store.Add(0, time.Since(start))
	if err != nil {
		return fmt.Errorf("shard %s: %w", sh.key, err)
	}
	return nil
}
