package pipeline

import (
	"runtime"
	"strings"
	"testing"

	"github.com/zspool/zspool/config"
)

func manifest(t *testing.T, js string) *config.Manifest {
	t.Helper()
	m, err := config.ParseManifest([]byte(js), "acq")
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	return m
}

func TestPlanLaysOutEpochsAndShardLayersOfARaggedArray(t *testing.T) {
	m := manifest(t, `{"version":1,"dtype":"uint16","dimensions":[
		{"name":"t","size":5,"chunk":2,"shard":2},{"name":"y","size":7,"chunk":3,"shard":2},{"name":"x","size":9,"chunk":4,"shard":2}]}`)
	p, err := NewPlan(m, "acq.raw", 5*7*9*2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := p.Levels[0].Grid
	checks := []struct {
		what      string
		got, want int64
	}{
		{"epochs", p.Epochs(), 3},
		{"epoch frames", p.EpochFrames(), 2},
		{"shard layers", p.ShardLayers(), 2},
		{"frame bytes", p.FrameBytes, 7 * 9 * 2},
		{"chunks per epoch", ChunksPerEpoch(g), 3 * 3},
		{"shards per layer", ShardsPerLayer(g), 2 * 2},
		{"slots per shard", g.SlotsPerShard(), 8},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
		}
	}
	if p.WorkingSet.Total() <= 0 || p.WorkingSet.Staging != 2*p.EpochBytes() {
		t.Errorf("working set %v: staging should be two epochs of %d bytes", p.WorkingSet, p.EpochBytes())
	}
}

func TestPlanInfersDimZeroAndClampsItsChunkToAShortAcquisition(t *testing.T) {
	m := manifest(t, `{"version":1,"dtype":"uint8","dimensions":[
		{"name":"t","size":0,"chunk":16,"shard":4},{"name":"x","size":10,"chunk":5}]}`)
	p, err := NewPlan(m, "acq.raw", 3*10, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := p.Levels[0].Grid
	if g.Shape[0] != 3 || g.Chunk[0] != 3 || g.Shard[0] != 1 {
		t.Fatalf("dim 0: shape %d chunk %d shard %d, want 3, 3, 1", g.Shape[0], g.Chunk[0], g.Shard[0])
	}
}

func TestPlanRefusesShardsBeyondTenThousandParts(t *testing.T) {
	// 32 MiB chunks, 10,000 of them per shard: 312 GiB, past 10,000 × 16 MiB.
	m := manifest(t, `{"version":1,"dtype":"uint16","dimensions":[
		{"name":"t","size":20000,"chunk":1,"shard":10000},{"name":"y","size":4096,"chunk":4096},{"name":"x","size":4096,"chunk":4096}]}`)
	s3 := func(part int64) Limits {
		return Limits{MaxObject: 10000 * part, MaxObjectHint: "10000 parts of part_size; or raise part_size"}
	}
	_, err := NewPlan(m, "acq.raw", 20000*4096*4096*2, Options{MemoryBudget: 1 << 40, Limits: s3(16 << 20)})
	if err == nil || !strings.Contains(err.Error(), "part_size") || !strings.Contains(err.Error(), "dimensions[*].shard") {
		t.Fatalf("err = %v, want a refusal naming part_size and the shard knob", err)
	}
	if IsInputError(err) {
		t.Errorf("a knob refusal is not bad input: %v", err)
	}
	if _, err := NewPlan(m, "acq.raw", 20000*4096*4096*2, Options{MemoryBudget: 1 << 40, Limits: s3(64 << 20)}); err != nil {
		t.Fatalf("with 64 MiB parts the shard fits: %v", err)
	}
}

func TestPlanRefusesAWorkingSetOverTheMemoryBudget(t *testing.T) {
	m := manifest(t, `{"version":1,"dtype":"uint16","dimensions":[
		{"name":"t","size":64,"chunk":64},{"name":"y","size":2048,"chunk":256},{"name":"x","size":2048,"chunk":256}]}`)
	_, err := NewPlan(m, "acq.raw", 64*2048*2048*2, Options{MemoryBudget: 768 << 20})
	if err == nil || !strings.Contains(err.Error(), "memory_budget") || !strings.Contains(err.Error(), "dimensions[0].chunk") {
		t.Fatalf("err = %v, want a refusal naming memory_budget and dimensions[0].chunk", err)
	}
}

func TestPlanRefusesARawFileOfTheWrongSize(t *testing.T) {
	m := manifest(t, `{"version":1,"dtype":"uint16","dimensions":[{"name":"t","size":4},{"name":"x","size":10}]}`)
	for _, size := range []int64{0, 79, 81} {
		_, err := NewPlan(m, "acq.raw", size, Options{})
		if !IsInputError(err) || !strings.Contains(err.Error(), "acq.raw") {
			t.Errorf("size %d: err = %v, want an input error naming the file", size, err)
		}
	}
}

func TestPlanStopsPyramidLevelsWhenEveryDownsampledDimFitsOneChunk(t *testing.T) {
	m := manifest(t, `{"version":1,"dtype":"uint8","multiscale":{"method":"mean"},"dimensions":[
		{"name":"t","type":"time","size":3},{"name":"y","type":"space","size":1000,"chunk":256},{"name":"x","type":"space","size":300,"chunk":256}]}`)
	p, err := NewPlan(m, "acq.raw", 3*1000*300, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var shapes [][]int64
	for _, l := range p.Levels {
		shapes = append(shapes, l.Grid.Shape)
	}
	// 1000 → 500 → 250 (fits 256); x 300 → 150 → 75; t stays.
	if len(p.Levels) != 3 || p.Levels[2].Grid.Shape[1] != 250 || p.Levels[2].Grid.Shape[2] != 75 || p.Levels[2].Grid.Shape[0] != 3 {
		t.Fatalf("levels %v", shapes)
	}
	if p.Levels[1].Scale[1] != 2 || p.Levels[2].Scale[2] != 4 || p.Levels[2].Scale[0] != 1 {
		t.Fatalf("scales %v %v", p.Levels[1].Scale, p.Levels[2].Scale)
	}
}

func TestTheWorkingSetCountsTheBuffersOfTheEngineItIsPlannedFor(t *testing.T) {
	// 16 frames of 2048² uint16 an epoch, 2 MiB chunks, 64 chunks a row, a
	// 4-level mean pyramid: the GPU bench's shape on a 16-core host.
	m := manifest(t, `{"version":1,"dtype":"uint16","multiscale":{"method":"mean"},"dimensions":[
		{"name":"t","size":64,"chunk":16},{"name":"y","type":"space","size":2048,"chunk":256},{"name":"x","type":"space","size":2048,"chunk":256}]}`)
	const raw = 64 * 2048 * 2048 * 2
	budget := Options{MemoryBudget: 1 << 40, Workers: 16}
	plan := func(o Options) *Plan {
		t.Helper()
		p, err := NewPlan(m, "acq.raw", raw, o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cpu := plan(budget)
	gpuOpts := budget
	gpuOpts.GPU = true
	gpu := plan(gpuOpts)
	klauspost := gpuOpts
	klauspost.ZstdEncoder = EncoderKlauspost
	gpuHost := plan(klauspost)

	if gpu.WorkingSet.Chunks != 0 {
		t.Errorf("the GPU encoding plan counts %d bytes of host compressors", gpu.WorkingSet.Chunks)
	}
	if gpuHost.WorkingSet.Chunks != cpu.WorkingSet.Chunks || gpuHost.WorkingSet.Chunks == 0 {
		t.Errorf("compressing on the host, the GPU plan counts %d bytes of compressors, the CPU plan %d",
			gpuHost.WorkingSet.Chunks, cpu.WorkingSet.Chunks)
	}
	// Two batches of frames in pinned memory instead of one row of them.
	if gpu.WorkingSet.Compressed != 2*cpu.WorkingSet.Compressed {
		t.Errorf("the GPU plan counts %d compressed bytes, want twice the CPU's %d", gpu.WorkingSet.Compressed, cpu.WorkingSet.Compressed)
	}
	if gpu.WorkingSet.Minimum() >= cpu.WorkingSet.Minimum() {
		t.Errorf("the GPU plan (%v) is not smaller than the CPU plan (%v) on 16 workers", gpu.WorkingSet, cpu.WorkingSet)
	}
	back, err := gpu.ForCPU()
	if err != nil {
		t.Fatal(err)
	}
	if back.WorkingSet != cpu.WorkingSet || back.Options.GPU || !gpu.Options.GPU {
		t.Errorf("ForCPU gave %v (GPU %v), want the CPU plan's %v and the GPU plan untouched", back.WorkingSet, back.Options.GPU, cpu.WorkingSet)
	}
	tight := gpuOpts
	tight.MemoryBudget = gpu.WorkingSet.Minimum()
	if _, err := plan(tight).ForCPU(); err == nil || !strings.Contains(err.Error(), "memory_budget") {
		t.Errorf("ForCPU within a budget only the GPU plan fits: err %v, want a memory_budget refusal", err)
	}
}

func TestSpareBudgetBuysOverlapAndMoreNeverBuysLess(t *testing.T) {
	m := manifest(t, `{"version":1,"dtype":"uint16","dimensions":[
		{"name":"t","size":64,"chunk":16,"shard":1},{"name":"y","size":2048,"chunk":256,"shard":8},{"name":"x","size":2048,"chunk":256,"shard":8}]}`)
	s3 := Limits{ShardBuffer: 16 << 20, Fixed: 8 * 16 << 20}
	var last StorePlan
	var lastMin int64
	for i, budget := range []int64{700 << 20, 768 << 20, 1 << 30, 4 << 30, 64 << 30} {
		p, err := NewPlan(m, "acq.raw", 64*2048*2048*2, Options{MemoryBudget: budget, Workers: 2, Limits: s3, GPU: true})
		if err != nil {
			t.Fatalf("budget %s: %v", FormatBytes(budget), err)
		}
		st := p.Store
		if p.WorkingSet.Total() > budget {
			t.Errorf("budget %s: working set %v is over it", FormatBytes(budget), p.WorkingSet)
		}
		if i > 0 && (st.LayersInFlight < last.LayersInFlight || st.QueueBytes < last.QueueBytes) {
			t.Errorf("budget %s bought %+v, less than the smaller budget's %+v", FormatBytes(budget), st, last)
		}
		if i > 0 && p.WorkingSet.Minimum() != lastMin {
			t.Errorf("the smallest working set changed with the budget: %d, then %d", lastMin, p.WorkingSet.Minimum())
		}
		last, lastMin = st, p.WorkingSet.Minimum()
	}
	if last.LayersInFlight < 2 || last.QueueBytes == 0 {
		t.Errorf("64 GiB bought %+v: want a queue and more than one layer in flight", last)
	}
	// Where the engine compresses on every core of a small host, the
	// budget buys no copies: they would take time from the compressors.
	cpu, err := NewPlan(m, "acq.raw", 64*2048*2048*2, Options{MemoryBudget: 64 << 30, Workers: 2, Limits: s3})
	if err != nil {
		t.Fatal(err)
	}
	wantQueue := runtime.GOMAXPROCS(0) >= minQueueCores
	if (cpu.Store.QueueBytes != 0) != wantQueue || cpu.Store.LayersInFlight < 2 {
		t.Errorf("the CPU plan on %d cores bought %+v: want a queue %v and more than one layer in flight", runtime.GOMAXPROCS(0), cpu.Store, wantQueue)
	}
}

func TestTheOldEncoderNameLitPlansTheSegmentedEncoder(t *testing.T) {
	m := manifest(t, `{"version":1,"dtype":"uint16","dimensions":[
		{"name":"t","size":4,"chunk":1},{"name":"y","size":64,"chunk":32},{"name":"x","size":64,"chunk":32}]}`)
	for _, tc := range []struct{ asked, planned string }{
		{EncoderLit, EncoderSegmented},
		{EncoderSegmented, EncoderSegmented},
		{EncoderKlauspost, EncoderKlauspost},
		{EncoderDefault, EncoderDefault},
	} {
		p, err := NewPlan(m, "acq.raw", 4*64*64*2, Options{ZstdEncoder: tc.asked})
		if err != nil {
			t.Fatalf("%q: %v", tc.asked, err)
		}
		if p.Options.ZstdEncoder != tc.planned {
			t.Errorf("zstd_encoder %q planned as %q, want %q", tc.asked, p.Options.ZstdEncoder, tc.planned)
		}
	}
}

func TestTheManifestsLevelPicksTheSegmentedParsesRung(t *testing.T) {
	for _, tc := range []struct {
		compression string
		level       int
		strong      bool
	}{
		{``, 1, false},
		{`,"compression":{"level":1}`, 1, false},
		{`,"compression":{"level":-3}`, -3, false},
		{`,"compression":{"level":0}`, 3, true}, // zstd's "default level"
		{`,"compression":{"level":3}`, 3, true},
		{`,"compression":{"level":19}`, 19, true},
	} {
		m := manifest(t, `{"version":1,"dtype":"uint16","dimensions":[{"name":"t","size":2},{"name":"x","size":8}]`+tc.compression+`}`)
		p, err := NewPlan(m, "acq.raw", 2*8*2, Options{ZstdChecksum: true})
		if err != nil {
			t.Fatal(err)
		}
		o := p.SegmentedOptions()
		if o.Level != tc.level || o.Strong() != tc.strong || !o.Checksum || o.ElemSize != 2 {
			t.Errorf("compression %q: options %+v (strong %v), want level %d, strong %v, checksum, 2-byte elements", tc.compression, o, o.Strong(), tc.level, tc.strong)
		}
	}
}

func TestTheManifestsByteOrderPutsTheGridOnEachPixelsHighByte(t *testing.T) {
	for _, tc := range []struct {
		order string
		phase int
	}{
		{``, 1},
		{`,"byte_order":"little"`, 1},
		{`,"byte_order":"big"`, 0},
	} {
		m := manifest(t, `{"version":1,"dtype":"uint16","dimensions":[{"name":"t","size":2},{"name":"x","size":8}]`+tc.order+`}`)
		p, err := NewPlan(m, "acq.raw", 2*8*2, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if o := p.SegmentedOptions(); o.GridPhase() != tc.phase {
			t.Errorf("byte order %q: options %+v put the grid at phase %d, want %d", tc.order, o, o.GridPhase(), tc.phase)
		}
	}
}

// On a host with cores to spare, the CPU engine's plan turns the queue
// into rows of every level that the engine lends the writers: whole rows,
// as many as fit, and never fewer, nor less of anything else, for more
// budget. The GPU engine's plan copies.
func TestTheCPUPlanLendsWholeRowsAndMoreBudgetNeverLendsFewer(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), minQueueCores)))
	m := manifest(t, `{"version":1,"dtype":"uint16","multiscale":{"method":"mean","levels":3},"dimensions":[
		{"name":"t","size":64,"chunk":16,"shard":1},{"name":"y","size":2048,"chunk":256,"shard":8},{"name":"x","size":2048,"chunk":256,"shard":8}]}`)
	var rows int64 // a row of every level, bound for bound
	var last *Plan
	for _, budget := range []int64{700 << 20, 768 << 20, 1 << 30, 1<<30 + 300<<20, 2 << 30, 4 << 30, 64 << 30} {
		p, err := NewPlan(m, "acq.raw", 64*2048*2048*2, Options{MemoryBudget: budget, Workers: 4})
		if err != nil {
			t.Fatalf("budget %s: %v", FormatBytes(budget), err)
		}
		if rows == 0 {
			for _, l := range p.Levels {
				rows += ChunksPerEpoch(l.Grid) * CompressBound(p.ChunkBytes(l))
			}
		}
		st := p.Store
		if p.WorkingSet.Total() > budget {
			t.Errorf("budget %s: working set %v is over it", FormatBytes(budget), p.WorkingSet)
		}
		if st.QueueBytes != int64(st.LentRows)*rows && (st.LentRows > 0 || st.QueueBytes != 0) {
			t.Errorf("budget %s: a queue of %d bytes for %d lent rows of %d", FormatBytes(budget), st.QueueBytes, st.LentRows, rows)
		}
		if last != nil && (st.LentRows < last.Store.LentRows || st.LayersInFlight < last.Store.LayersInFlight || p.EngineRows < last.EngineRows) {
			t.Errorf("budget %s bought %+v and %d engine rows, less than the smaller budget's %+v and %d",
				FormatBytes(budget), st, p.EngineRows, last.Store, last.EngineRows)
		}
		last = p
	}
	if last.Store.LentRows < 2 || last.Store.QueueBytes > maxQueueBytes {
		t.Errorf("64 GiB lent %d rows in %s: want several, within %s", last.Store.LentRows, FormatBytes(last.Store.QueueBytes), FormatBytes(maxQueueBytes))
	}
	gpu, err := NewPlan(m, "acq.raw", 64*2048*2048*2, Options{MemoryBudget: 64 << 30, Workers: 4, GPU: true})
	if err != nil {
		t.Fatal(err)
	}
	if gpu.Store.LentRows != 0 || gpu.Store.QueueBytes == 0 {
		t.Errorf("the GPU plan queued %+v: want copies, no lent rows", gpu.Store)
	}
}

// One worker per core is a default, not a need: where the budget does not
// hold every core's chunk buffers (two jobs at once on a host of many
// cores), the plan runs fewer, and refuses only when one does not fit.
// Workers asked for are taken as asked.
func TestABudgetTooSmallForAWorkerPerCorePlansFewerWorkersInsteadOfRefusing(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	m := manifest(t, `{"version":1,"dtype":"uint16","dimensions":[
		{"name":"t","size":64,"chunk":16,"shard":1},{"name":"y","size":2048,"chunk":256,"shard":8},{"name":"x","size":2048,"chunk":256,"shard":8}]}`)
	const raw = 64 * 2048 * 2048 * 2
	plan := func(o Options) (*Plan, error) { return NewPlan(m, "acq.raw", raw, o) }
	all, err := plan(Options{MemoryBudget: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	if all.Options.Workers != 8 {
		t.Fatalf("a large budget planned %d workers on 8 cores, want 8", all.Options.Workers)
	}
	perWorker := all.WorkingSet.Chunks / 8
	budget := all.WorkingSet.Minimum() - 3*perWorker // holds 5 workers, not 6
	p, err := plan(Options{MemoryBudget: budget})
	if err != nil {
		t.Fatalf("a budget that holds 5 workers: %v", err)
	}
	if p.Options.Workers != 5 || p.WorkingSet.Total() > budget {
		t.Fatalf("planned %d workers in %v of a %s budget, want 5 within it", p.Options.Workers, p.WorkingSet, FormatBytes(budget))
	}
	if _, err := plan(Options{MemoryBudget: budget, Workers: 8}); err == nil || !strings.Contains(err.Error(), "exceeds memory_budget") {
		t.Fatalf("8 workers asked for in a budget that holds 5: %v, want the budget refused", err)
	}
	if _, err := plan(Options{MemoryBudget: all.WorkingSet.Minimum() - 8*perWorker}); err == nil || !strings.Contains(err.Error(), "exceeds memory_budget") {
		t.Fatalf("a budget that holds no worker: %v, want it refused", err)
	}
}
