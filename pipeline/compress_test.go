package pipeline

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// testCompressor is a compressor of workers zstd workers for rows of n
// chunks of 8 bytes, two rows at once, closed when the test ends.
func testCompressor(t *testing.T, workers, n int) *Compressor {
	t.Helper()
	return testCompressorRows(t, workers, n, 2)
}

// testCompressorRows is testCompressor holding rows rows at once.
func testCompressorRows(t *testing.T, workers, n, rows int) *Compressor {
	t.Helper()
	m := manifest(t, `{"version":1,"dtype":"uint8","dimensions":[
		{"name":"t","size":4,"chunk":1},{"name":"y","size":4,"chunk":4},{"name":"x","size":16,"chunk":2}],
		"compression":{"codec":"zstd","level":1}}`)
	p, err := NewPlan(m, "acq.raw", 4*4*16, Options{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCompressor(p, p.ChunkBytes(p.Levels[0]), n, rows, "scatter")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// A row ends when its last chunk does: the compressor hands out first the
// chunks that took longest in the row before, so that a long one does not
// start last while the other workers wait for it.
func TestTheCompressorHandsOutTheLongestChunksFirst(t *testing.T) {
	const n = 8
	c := testCompressor(t, 1, n) // one worker: its order is the hand-out order
	run := func(slow func(i int) time.Duration) []int {
		var order []int
		err := c.Run(context.Background(), n, n*8, func(i int, buf []byte) []byte {
			order = append(order, i)
			time.Sleep(slow(i))
			for j := range buf {
				buf[j] = byte(i + j)
			}
			return buf
		})
		if err != nil {
			t.Fatal(err)
		}
		return order
	}
	// Chunks 25 ms apart: at 4 ms, a sleep that overshot under -race on a
	// busy 2-core CI machine once measured chunk 3 longer than chunk 4.
	if got := run(func(i int) time.Duration { return time.Duration(i) * 25 * time.Millisecond }); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("first row handed out in %v, want chunk order", got)
	}
	if got := run(func(int) time.Duration { return 0 }); !slices.Equal(got, []int{7, 6, 5, 4, 3, 2, 1, 0}) {
		t.Fatalf("second row handed out in %v, want the first row's longest first", got)
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for i := range n { // the outputs stay in chunk order
		got, err := dec.DecodeAll(c.Stored(i), nil)
		if err != nil || len(got) == 0 || got[0] != byte(i) {
			t.Fatalf("chunk %d stored %d bytes that decode to %.4v (%v)", i, len(c.Stored(i)), got, err)
		}
	}
}

func TestARowLargerThanTheCompressorWasMadeForIsAnError(t *testing.T) {
	c := testCompressor(t, 2, 8)
	err := c.Run(context.Background(), 9, 72, func(_ int, buf []byte) []byte { return buf })
	if err == nil || !strings.Contains(err.Error(), "9 chunks") || !strings.Contains(err.Error(), "rows of 8") {
		t.Fatalf("got %v, want an error naming both sizes", err)
	}
}

// The planner counts one row of compressed chunks for a compressor whose
// rows run one at a time: Run after Run must write into the same outputs,
// not alternate between two sets.
func TestRowsRunOneAtATimeReuseOneSetOfOutputs(t *testing.T) {
	c := testCompressor(t, 2, 4)
	chunk := func(i int, buf []byte) []byte {
		for j := range buf {
			buf[j] = byte(i*7 + j)
		}
		return buf
	}
	var first []*byte
	for run := range 3 {
		if err := c.Run(context.Background(), 4, 32, chunk); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			at := &c.Stored(i)[0]
			if run == 0 {
				first = append(first, at)
			} else if at != first[i] {
				t.Fatalf("run %d stored chunk %d in other memory than run 0", run, i)
			}
		}
	}
}

// fillChunk writes chunk i of run r into the worker's scratch.
func fillChunk(r int) func(i int, buf []byte) []byte {
	return func(i int, buf []byte) []byte {
		for j := range buf {
			buf[j] = byte(r*31 + i*7 + j)
		}
		return buf
	}
}

// A row lent to the store keeps its outputs until the lease comes back:
// with every row lent, the next Start waits for one, and then reuses it.
func TestALentRowIsReusedOnlyOnceItsLeaseIsReleased(t *testing.T) {
	c := testCompressorRows(t, 2, 4, 1)
	if err := c.Run(context.Background(), 4, 32, fillChunk(0)); err != nil {
		t.Fatal(err)
	}
	row := c.Last()
	want := make([][]byte, 4)
	for i := range want {
		want[i] = bytes.Clone(row.Stored(i))
	}
	lease := c.Lend(row)
	lease.Hold() // a writer's hold besides the assembler's
	started := make(chan error, 1)
	go func() { started <- c.Run(context.Background(), 4, 32, fillChunk(1)) }()
	select {
	case err := <-started:
		t.Fatalf("a row started while the only one was lent (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	lease.Release()
	select {
	case err := <-started:
		t.Fatalf("a row started with one of two holds still on the lent one (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	for i := range want { // the lent outputs are untouched meanwhile
		if !bytes.Equal(row.Stored(i), want[i]) {
			t.Fatalf("chunk %d of the lent row changed while it was lent", i)
		}
	}
	lease.Release()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the row did not start once the lease came back")
	}
	if c.Last() != row {
		t.Fatal("the row given back was not the one reused")
	}
}

// A Start that waits for a lent row gives up when its context ends.
func TestAStartWaitingForALentRowStopsWithItsContext(t *testing.T) {
	c := testCompressorRows(t, 1, 2, 1)
	if err := c.Run(context.Background(), 2, 16, fillChunk(0)); err != nil {
		t.Fatal(err)
	}
	lease := c.Lend(c.Last())
	defer lease.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Start(ctx, 2, 16, fillChunk(1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's deadline", err)
	}
}

// Rows in flight that are not lent are never waited for: a Start beyond
// them is a caller's mistake, said at once.
func TestStartingMoreRowsThanTheCompressorHoldsIsAnError(t *testing.T) {
	c := testCompressorRows(t, 1, 2, 2)
	var rows []*Row
	for r := range 2 {
		row, err := c.Start(context.Background(), 2, 16, fillChunk(r))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	_, err := c.Start(context.Background(), 2, 16, fillChunk(2))
	if err == nil || !strings.Contains(err.Error(), "all 2 in flight") {
		t.Fatalf("got %v, want an error saying all rows are in flight", err)
	}
	for _, r := range rows {
		if err := c.Wait(r); err != nil {
			t.Fatal(err)
		}
	}
}
