package pipeline_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zspool/zspool/pipeline"
)

// lender lends feedLent's rows and counts what came back; a row given
// back is overwritten at once, so a writer that read it after its release
// would store the wrong bytes (and -race would see it).
type lender struct {
	lent, back atomic.Int64
}

func (l *lender) lend(out *pipeline.LevelOutput) {
	l.lent.Add(1)
	out.Lease = pipeline.NewLease(func() {
		for _, so := range out.Shards {
			for _, ch := range so.Chunks {
				for i := range ch.Data {
					ch.Data[i] = 'X'
				}
			}
		}
		l.back.Add(1)
	})
}

// lendingPlan is assemblePlan's large budget with its queue's copies
// turned into lent rows, as the CPU engine's plan has them.
func lendingPlan(t *testing.T) *pipeline.Plan {
	p := assemblePlan(t, 8<<30)
	p.Store.LentRows = 2
	return p
}

func TestLentRowsStoreTheSameObjectsAsCopiesAndEveryOneComesBack(t *testing.T) {
	copies := assemblePlan(t, 8<<30)
	if copies.Store.QueueBytes == 0 || copies.Store.LayersInFlight < 2 {
		t.Fatalf("the large budget planned %+v: no queue to compare with", copies.Store)
	}
	want := &slowStore{rng: rand.New(rand.NewPCG(1, 2)), objects: map[string][]byte{}}
	if err := feed(context.Background(), copies, pipeline.NewAssembler(context.Background(), copies, want)); err != nil {
		t.Fatal(err)
	}
	p := lendingPlan(t)
	got := &slowStore{rng: rand.New(rand.NewPCG(1, 2)), objects: map[string][]byte{}}
	var l lender
	if err := feedLent(context.Background(), p, pipeline.NewAssembler(context.Background(), p, got), &l); err != nil {
		t.Fatal(err)
	}
	if len(got.objects) != len(want.objects) || len(want.objects) != 48 {
		t.Fatalf("%d objects lent, %d copied; want 48 each", len(got.objects), len(want.objects))
	}
	for k, v := range want.objects {
		if string(got.objects[k]) != string(v) {
			t.Errorf("%s differs between lent and copied rows", k)
		}
	}
	if l.back.Load() != l.lent.Load() {
		t.Fatalf("%d rows lent, %d given back", l.lent.Load(), l.back.Load())
	}
}

// A failed run gives back every row it was lent, queued or not, so that
// an engine waiting for one is never left waiting.
func TestLentRowsComeBackWhenACommitFails(t *testing.T) {
	p := lendingPlan(t)
	s := &slowStore{rng: rand.New(rand.NewPCG(3, 4)), objects: map[string][]byte{}, failKey: "asm.ome.zarr/0/c/5/1/0"}
	a := pipeline.NewAssembler(context.Background(), p, s)
	var l lender
	err := feedLent(context.Background(), p, a, &l)
	if err == nil || !strings.Contains(err.Error(), "injected commit failure") {
		t.Fatalf("err = %v, want the injected failure", err)
	}
	a.Abort()
	if l.lent.Load() == 0 || l.back.Load() != l.lent.Load() {
		t.Fatalf("%d rows lent, %d given back", l.lent.Load(), l.back.Load())
	}
}

// Where rows are lent, one that is not could only be written at once,
// ahead of the lent rows queued before it: it is refused, not misordered.
func TestARowWithoutALeaseIsRefusedWhereRowsAreLent(t *testing.T) {
	p := lendingPlan(t)
	a := pipeline.NewAssembler(context.Background(), p, &slowStore{rng: rand.New(rand.NewPCG(5, 6)), objects: map[string][]byte{}})
	defer a.Abort()
	err := a.Add(context.Background(), pipeline.LevelOutput{Level: 0, Epoch: 0,
		Shards: []pipeline.ShardOut{{Inner: 0, Chunks: []pipeline.ChunkOut{{Slot: 0, Data: []byte("x")}}}}})
	if err == nil || !strings.Contains(err.Error(), "without a lease") {
		t.Fatalf("got %v, want the row refused for its missing lease", err)
	}
}
