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
	onFail    func() // called before failKey's commit fails, when set
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
	if w.key == w.s.failKey && w.s.onFail != nil {
		w.s.onFail()
	}
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
	return feedLent(ctx, p, a, nil)
}

// feedLent is feed with every row lent by l, when l is set.
func feedLent(ctx context.Context, p *pipeline.Plan, a *pipeline.Assembler, l *lender) error {
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
		if l != nil {
			l.lend(&out)
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

// sealStore's writers seal: Seal keeps the bytes aside, Commit makes them
// visible after a pause, so commits of several layers can overlap.
type sealStore struct {
	slowStore
	recorded   map[string]bool // seals the assembler has recorded
	aborted    map[string]bool
	committing map[int64]int // shards committing now, by layer
	overlap    int           // most layers committing at once
}

// record notes seals the assembler put on record.
func (s *sealStore) record(objs []pipeline.SealedObject) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range objs {
		s.recorded[o.Key] = true
	}
}

type sealWriter struct {
	slowWriter
}

func (w *sealWriter) Seal() (pipeline.SealedObject, bool, error) {
	return pipeline.SealedObject{Key: w.key, UploadID: "u-" + w.key, Size: int64(w.buf.Len())}, true, nil
}

func layerOf(t *testing.T, key string) int64 {
	var l int64
	if _, err := fmt.Sscanf(key, "asm.ome.zarr/0/c/%d/", &l); err != nil {
		t.Fatalf("key %s: %v", key, err)
	}
	return l
}

func TestSealsAreRecordedInOrderCommitsOverlapAndLayersAreDoneInOrderOnceVisible(t *testing.T) {
	p := assemblePlan(t, 8<<30)
	if p.Store.LayersInFlight < 2 {
		t.Fatalf("store plan %+v: no overlap to test", p.Store)
	}
	s := &sealStore{slowStore: slowStore{rng: rand.New(rand.NewPCG(5, 6)), objects: map[string][]byte{}},
		recorded: map[string]bool{}, aborted: map[string]bool{}, committing: map[int64]int{}}
	a := pipeline.NewAssembler(context.Background(), p, &sealingStore{s: s, t: t})
	var sealedLayers, doneLayers []int64
	a.Sealed = func(_ int, layer int64, objs []pipeline.SealedObject) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		l := layerOf(t, objs[0].Key)
		if l != layer {
			t.Errorf("layer %d's record holds layer %d's shards", layer, l)
		}
		for _, o := range objs {
			if layerOf(t, o.Key) != l {
				t.Errorf("one record holds layers %d and %d", l, layerOf(t, o.Key))
			}
			s.recorded[o.Key] = true
		}
		sealedLayers = append(sealedLayers, l)
		return nil
	}
	a.LayerDone = func(_ int, layer int64) error {
		// What the journal counts must be visible: every shard of this
		// layer and of those before it.
		s.mu.Lock()
		n := 0
		for k := range s.objects {
			if layerOf(t, k) <= layer {
				n++
			}
		}
		s.mu.Unlock()
		if n != 4*int(layer+1) {
			t.Errorf("layer %d done with %d shards of layers 0…%d visible, want %d", layer, n, layer, 4*(layer+1))
		}
		doneLayers = append(doneLayers, layer)
		return nil
	}
	var committed []string
	a.Committed = func(objs []pipeline.SealedObject) {
		for _, o := range objs {
			committed = append(committed, o.Key)
		}
	}
	if err := feed(context.Background(), p, a); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if i >= len(sealedLayers) || sealedLayers[i] != int64(i) || doneLayers[i] != int64(i) {
			t.Fatalf("seals recorded for layers %v, layers done %v; want 0…11 in order", sealedLayers, doneLayers)
		}
	}
	if len(s.objects) != 48 || len(committed) != 48 {
		t.Fatalf("%d shards stored, %d reported committed; want 48", len(s.objects), len(committed))
	}
	if s.overlap < 2 {
		t.Fatalf("at most %d layer(s) committed at once: the commits did not overlap", s.overlap)
	}
	// The same bytes as a store that does not seal.
	plain := &slowStore{rng: rand.New(rand.NewPCG(1, 2)), objects: map[string][]byte{}}
	if err := feed(context.Background(), p, pipeline.NewAssembler(context.Background(), p, plain)); err != nil {
		t.Fatal(err)
	}
	for k, v := range plain.objects {
		if !bytes.Equal(s.objects[k], v) {
			t.Errorf("%s differs between a sealing and a plain store", k)
		}
	}
}

func TestAFailedSealedCommitFailsTheRunButRecordedSealsStillCommitAndUnrecordedOnesAbort(t *testing.T) {
	p := assemblePlan(t, 8<<30)
	s := &sealStore{slowStore: slowStore{rng: rand.New(rand.NewPCG(7, 8)), objects: map[string][]byte{}, failKey: "asm.ome.zarr/0/c/5/1/0"},
		recorded: map[string]bool{}, aborted: map[string]bool{}, committing: map[int64]int{}}
	a := pipeline.NewAssembler(context.Background(), p, &sealingStore{s: s, t: t})
	a.Sealed = func(_ int, _ int64, objs []pipeline.SealedObject) error {
		s.record(objs)
		return nil
	}
	err := feed(context.Background(), p, a)
	if err == nil || !strings.Contains(err.Error(), "injected commit failure") || !strings.Contains(err.Error(), "c/5/1/0") {
		t.Fatalf("err = %v, want the injected failure naming its shard", err)
	}
	a.Abort()
	recordedSealsCommitted(t, s)
}

// recordedSealsCommitted fails t unless every seal on record but the one
// whose commit failed was committed and none aborted, and nothing was
// committed without its seal on record.
func recordedSealsCommitted(t *testing.T, s *sealStore) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.recorded {
		if _, ok := s.objects[k]; !ok && k != s.failKey {
			t.Errorf("recorded seal %s was not committed", k)
		}
		if s.aborted[k] {
			t.Errorf("recorded seal %s was aborted", k)
		}
	}
	for k := range s.objects {
		if !s.recorded[k] {
			t.Errorf("%s was committed without its seal on record", k)
		}
	}
}

// A layer's seals go on record while the assembler is being stopped by a
// failure elsewhere: the writers waiting to commit them must not take the
// stop for a refusal and abort what the journal now vouches for. Layer 1's
// record returns only after layer 0's commit has failed and the failure
// has had time to stop the assembler, and layer 0's commit fails only
// once layer 1's record has begun.
func TestASealRecordedWhileTheAssemblerStopsIsCommittedNotAborted(t *testing.T) {
	p := assemblePlan(t, 8<<30)
	recording, failed := make(chan struct{}), make(chan struct{})
	s := &sealStore{slowStore: slowStore{rng: rand.New(rand.NewPCG(9, 10)), objects: map[string][]byte{},
		failKey: "asm.ome.zarr/0/c/0/0/0", onFail: func() { <-recording; close(failed) }},
		recorded: map[string]bool{}, aborted: map[string]bool{}, committing: map[int64]int{}}
	a := pipeline.NewAssembler(context.Background(), p, &sealingStore{s: s, t: t})
	a.Sealed = func(_ int, layer int64, objs []pipeline.SealedObject) error {
		if layer == 1 {
			close(recording)
			<-failed
			time.Sleep(50 * time.Millisecond)
		}
		s.record(objs)
		return nil
	}
	err := feed(context.Background(), p, a)
	if err == nil || !strings.Contains(err.Error(), "injected commit failure") || !strings.Contains(err.Error(), "c/0/0/0") {
		t.Fatalf("err = %v, want the injected failure naming its shard", err)
	}
	a.Abort()
	s.mu.Lock()
	n := 0
	for k := range s.recorded {
		if layerOf(t, k) == 1 {
			n++
		}
	}
	s.mu.Unlock()
	if n != 4 {
		t.Fatalf("%d of layer 1's 4 seals on record: the record did not run through the stop", n)
	}
	recordedSealsCommitted(t, s)
}

// sealingStore hands out sealWriters that report to the test.
type sealingStore struct {
	s *sealStore
	t *testing.T
}

func (st *sealingStore) Create(_ context.Context, key string) (pipeline.ObjectWriter, error) {
	return &trackedSealWriter{sealWriter: sealWriter{slowWriter: slowWriter{s: &st.s.slowStore, key: key}}, st: st}, nil
}
func (st *sealingStore) Put(context.Context, string, []byte) error { return nil }
func (st *sealingStore) Delete(context.Context, string) error      { return nil }

type trackedSealWriter struct {
	sealWriter
	st *sealingStore
}

func (w *trackedSealWriter) Commit() error {
	s, l := w.st.s, layerOf(w.st.t, w.key)
	s.mu.Lock()
	if !s.recorded[w.key] {
		w.st.t.Errorf("%s commits before its seal is recorded", w.key)
	}
	s.committing[l]++
	s.overlap = max(s.overlap, len(s.committing))
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.committing[l]--; s.committing[l] == 0 {
			delete(s.committing, l)
		}
		s.mu.Unlock()
	}()
	return w.slowWriter.Commit()
}

func (w *trackedSealWriter) Abort() error {
	w.st.s.mu.Lock()
	defer w.st.s.mu.Unlock()
	w.st.s.aborted[w.key] = true
	return nil
}

// heldStore seals at once and holds every commit of layer 0 until
// release is closed; it reports the layer of every shard it creates.
type heldStore struct {
	release chan struct{}
	created chan int64
	t       *testing.T
}

type heldWriter struct {
	sealWriter
	st *heldStore
}

func (st *heldStore) Create(_ context.Context, key string) (pipeline.ObjectWriter, error) {
	st.created <- layerOf(st.t, key)
	s := &slowStore{rng: rand.New(rand.NewPCG(3, 4)), objects: map[string][]byte{}}
	return &heldWriter{sealWriter: sealWriter{slowWriter: slowWriter{s: s, key: key}}, st: st}, nil
}
func (st *heldStore) Put(context.Context, string, []byte) error { return nil }
func (st *heldStore) Delete(context.Context, string) error      { return nil }

func (w *heldWriter) Commit() error {
	if layerOf(w.st.t, w.key) == 0 {
		<-w.st.release
	}
	return w.slowWriter.Commit()
}

func TestASealedLayerWaitingForItsCommitDoesNotHoldUpTheNextLayers(t *testing.T) {
	// The smallest budget: one layer in flight. Layer 0 seals, then its
	// commit hangs (a slow CompleteMultipartUpload); the layers after it
	// must still be written, up to the bound on layers not yet recorded,
	// and no further.
	p := assemblePlan(t, 8<<30)
	small := assemblePlan(t, p.WorkingSet.Minimum())
	if small.Store.LayersInFlight != 1 {
		t.Fatalf("store plan %+v: want one layer in flight", small.Store)
	}
	st := &heldStore{release: make(chan struct{}), created: make(chan int64, 64), t: t}
	a := pipeline.NewAssembler(context.Background(), small, st)
	var done []int64
	a.LayerDone = func(_ int, layer int64) error { done = append(done, layer); return nil }
	fed := make(chan error, 1)
	go func() { fed <- feed(context.Background(), small, a) }()

	const bound = 4 // layers not yet recorded per layer in flight (pendingPerSlot)
	highest := int64(-1)
	deadline := time.After(10 * time.Second)
	for highest < bound-1 {
		select {
		case l := <-st.created:
			highest = max(highest, l)
		case <-deadline:
			t.Fatalf("with layer 0's commit held, only layers up to %d were opened; want up to %d", highest, bound-1)
		}
	}
	for quiet := false; !quiet; {
		select {
		case l := <-st.created:
			if l >= bound {
				t.Fatalf("layer %d was opened while layer 0 was not recorded: more than %d layers pending", l, bound)
			}
		case <-time.After(100 * time.Millisecond):
			quiet = true
		}
	}
	if len(done) != 0 {
		t.Fatalf("layers %v recorded before layer 0 was committed", done)
	}
	close(st.release)
	if err := <-fed; err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if i >= len(done) || done[i] != int64(i) {
			t.Fatalf("layers done %v, want 0…11 in order", done)
		}
	}
}
