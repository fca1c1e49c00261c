package pipeline

import (
	"context"
	"errors"
	"testing"
)

// holdingEngine holds every epoch it is given until the next Encode, as
// the CPU engine with two rows in flight does, and fails at epoch failAt,
// where it may still be reading that epoch and the one before (a row
// started, the one before it not yet finished).
type holdingEngine struct {
	failAt   int64
	reading  []int64
	settled  bool
	released map[int64]bool // by the source
	reads    []int64        // epochs the engine read after their release
}

func (e *holdingEngine) Encode(_ context.Context, ep Epoch) ([]LevelOutput, error) {
	if ep.Index == e.failAt {
		e.reading = []int64{ep.Index - 1, ep.Index}
		return nil, errors.New("encode failed")
	}
	e.reading = []int64{ep.Index}
	return nil, nil
}

func (e *holdingEngine) Settle() {
	for _, i := range e.reading {
		if e.released[i] {
			e.reads = append(e.reads, i)
		}
	}
	e.reading, e.settled = nil, true
}

func (e *holdingEngine) HoldsEpochs() bool                            { return true }
func (e *holdingEngine) Flush(context.Context) ([]LevelOutput, error) { return nil, nil }
func (e *holdingEngine) Stages() []Stage                              { return nil }
func (e *holdingEngine) Close() error                                 { return nil }

// epochList hands out n one-byte epochs and tells the engine of releases.
type epochList struct {
	n, next int64
	eng     *holdingEngine
}

func (s *epochList) Next() (Epoch, bool) {
	if s.next == s.n {
		return Epoch{}, false
	}
	s.next++
	return Epoch{Index: s.next - 1, Frames: 1, Data: []byte{1}}, true
}
func (s *epochList) Release(e Epoch) { s.eng.released[e.Index] = true }
func (s *epochList) Err() error      { return nil }
func (s *epochList) Close()          {}

func TestAFailedEncodeSettlesAnEngineThatHoldsEpochsBeforeConvertGoesOn(t *testing.T) {
	eng := &holdingEngine{failAt: 2, released: map[int64]bool{}}
	src := &epochList{n: 4, eng: eng}
	_, err := encodeEpochs(context.Background(), eng, src, nil, NewMeter("read"), 0, nil)
	if err == nil {
		t.Fatal("the engine's failure was not returned")
	}
	if !eng.settled {
		t.Fatal("encodeEpochs returned its failure with the engine still holding an epoch: the source would unmap it under the engine")
	}
	if len(eng.reads) != 0 {
		t.Fatalf("epochs %v were released while the failed engine could still read them", eng.reads)
	}
}
