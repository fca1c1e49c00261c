package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/pipeline"
)

// slowStore commits after a random pause, so commits of different shards
// finish in any order, keeps what was committed, and can fail one commit.
type slowStore struct {
	mu        sync.Mutex
	rng       *rand.Rand
	objects   map[string][]byte
	committed []string
	failKey   string
}

type slowWriter struct {
	s   *slowStore
	key string
	buf bytes.Buffer
}

func (s *slowStore) Create(_ context.Context, key string) (pipeline.ObjectWriter, error) {
	return &slowWriter{s: s, key: key}, nil
}
func (s *slowStore) Put(context.Context, string, []byte) error { return nil }
func (s *slowStore) Delete(context.Context, string) error      { return nil }

func (w *slowWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }
func (w *slowWriter) Abort() error                { return nil }
func (w *slowWriter) Commit() error {
	w.s.mu.Lock()
	d := time.Duration(w.s.rng.IntN(3000)) * time.Microsecond
	w.s.mu.Unlock()
	time.Sleep(d)
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.key == w.s.failKey {
		return errors.New("injected commit failure")
	}
	w.s.objects[w.key] = bytes.Clone(w.buf.Bytes())
	w.s.committed = append(w.s.committed, w.key)
	return nil
}

// assemblePlan is a 3-level-deep time series: 12 layers of 2×2 shards.
func assemblePlan(t *testing.T, budget int64) *pipeline.Plan {
	t.Helper()
	m, err := config.ParseManifest([]byte(`{"version":1,"dtype":"uint16","name":"asm","dimensions":[
		{"name":"t","size":24,"chunk":2,"shard":1},{"name":"y","size":64,"chunk":16,"shard":2},{"name":"x","size":64,"chunk":16,"shard":2}]}`), "asm")
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.NewPlan(m, "asm.raw", 24*64*64*2, pipeline.Options{MemoryBudget: budget, GPU: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// feed hands the assembler every chunk row of level 0, each chunk's bytes
// naming it, and returns what it returned.
func feed(ctx context.Context, p *pipeline.Plan, a *pipeline.Assembler) error {
	g := p.Levels[0].Grid
	for row := range g.Chunks(0) {
		out := pipeline.LevelOutput{Level: 0, Epoch: row}
		for inner := range int64(4) {
			so := pipeline.ShardOut{Inner: inner}
			for slot := range g.SlotsPerShard() {
				if (row+inner+slot)%5 == 0 {
					continue // an absent chunk
				}
				so.Chunks = append(so.Chunks, pipeline.ChunkOut{Slot: slot, Data: []byte(strings.Repeat(fmt.Sprintf("r%d.i%d.s%d;", row, inner, slot), 50))})
			}
			out.Shards = append(out.Shards, so)
		}
		if err := a.Add(ctx, out); err != nil {
			return err
		}
	}
	return a.Wait()
}

func TestOverlappedShardsCommitAndRecordLayerAfterLayerWhateverOrderTheStoreFinishes(t *testing.T) {
	// A small budget writes rows as they come; a large one queues copies
	// and keeps several layers in flight. Both must store the same bytes
	// and record layers in order.
	var want map[string][]byte
	smallest := assemblePlan(t, 8<<30).WorkingSet.Minimum()
	for _, budget := range []int64{smallest, 8 << 30} {
		p := assemblePlan(t, budget)
		s := &slowStore{rng: rand.New(rand.NewPCG(1, 2)), objects: map[string][]byte{}}
		a := pipeline.NewAssembler(context.Background(), p, s)
		var layers []int64
		var inFlight sync.Mutex
		a.LayerDone = func(level int, layer int64) error {
			if !inFlight.TryLock() {
				t.Error("LayerDone calls overlap")
				return nil
			}
			defer inFlight.Unlock()
			// Every shard of this layer, and of no later one, is stored.
			s.mu.Lock()
			for _, k := range s.committed {
				var l int64
				if _, err := fmt.Sscanf(k, "asm.ome.zarr/0/c/%d/", &l); err == nil && l > layer {
					t.Errorf("layer %d's shard %s was committed before layer %d was recorded", l, k, layer)
				}
			}
			s.mu.Unlock()
			layers = append(layers, layer)
			return nil
		}
		if err := feed(context.Background(), p, a); err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		for i, l := range layers {
			if l != int64(i) {
				t.Fatalf("budget %d (store plan %+v): layers recorded in the order %v", budget, p.Store, layers)
			}
		}
		if len(layers) != 12 || len(s.objects) != 48 {
			t.Fatalf("budget %d: %d layers recorded, %d shards stored; want 12 and 48", budget, len(layers), len(s.objects))
		}
		if want == nil {
			want = s.objects
			if p.Store.QueueBytes != 0 {
				t.Fatalf("the small budget queued %d bytes: the two runs would not differ", p.Store.QueueBytes)
			}
		} else {
			if p.Store.QueueBytes == 0 || p.Store.LayersInFlight < 2 {
				t.Fatalf("the large budget planned %+v: no overlap to test", p.Store)
			}
			for k, v := range want {
				if !bytes.Equal(s.objects[k], v) {
					t.Errorf("%s differs between written-as-they-come and queued", k)
				}
			}
		}
	}
}

func TestAFailedCommitStopsTheAssemblerAndRecordsNoLaterLayer(t *testing.T) {
	p := assemblePlan(t, 8<<30)
	s := &slowStore{rng: rand.New(rand.NewPCG(3, 4)), objects: map[string][]byte{}, failKey: "asm.ome.zarr/0/c/5/1/0"}
	a := pipeline.NewAssembler(context.Background(), p, s)
	var last int64 = -1
	a.LayerDone = func(_ int, layer int64) error {
		last = layer
		return nil
	}
	err := feed(context.Background(), p, a)
	if err == nil || !strings.Contains(err.Error(), "injected commit failure") || !strings.Contains(err.Error(), "c/5/1/0") {
		t.Fatalf("err = %v, want the injected failure naming its shard", err)
	}
	a.Abort()
	if last >= 5 {
		t.Fatalf("layer %d was recorded although layer 5 failed to commit", last)
	}
	for k := range s.objects {
		var l int64
		if _, err := fmt.Sscanf(k, "asm.ome.zarr/0/c/%d/", &l); err == nil && l > 5 {
			t.Errorf("shard %s of a layer after the failed one was committed", k)
		}
	}
}
