package pipeline

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestEpochReaderStreamsASparse64GiBFileAndStopsEarly(t *testing.T) {
	const frameBytes = 8 << 20 // one 2048×2048 uint16 frame
	const size = 64 << 30
	p := filepath.Join(t.TempDir(), "huge.raw")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Skipf("this filesystem cannot hold a sparse 64 GiB file: %v", err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	epochs := int64(size / frameBytes)
	r := NewEpochReader(context.Background(), f, "huge.raw", 0, epochs, 1, frameBytes) // 8192 frames
	for i := int64(0); i < 5; i++ {
		e, ok := r.Next()
		if !ok {
			t.Fatalf("reader stopped after %d epochs: %v", i, r.Err())
		}
		if e.Index != i || e.Frames != 1 || len(e.Data) != frameBytes {
			t.Fatalf("epoch %d: index %d, %d frames, %d bytes", i, e.Index, e.Frames, len(e.Data))
		}
		r.Release(e)
	}
	r.Close()
	runtime.ReadMemStats(&after)
	// Two epoch buffers, whatever the file's size: the whole file is never
	// held, nor buffered ahead.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 3*frameBytes {
		t.Fatalf("reading 5 epochs of a 64 GiB file allocated %d bytes, want at most two %d-byte buffers", grew, frameBytes)
	}
}

func TestReadAtInPiecesFillsTheBufferOrStopsAtTheFirstShortPiece(t *testing.T) {
	size := 4*readPiece + 12345
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>13)
	}
	f := rawFile(t, data)
	cases := []struct {
		name    string
		off     int64
		len     int
		readers int
		wantN   int
		wantEOF bool
	}{
		{"a whole file read by three readers", 0, size, 3, size, false},
		{"an unaligned window read by eight readers", 333, size - 1000, 8, size - 1000, false},
		{"one reader reads it all in one call", 0, size, 1, size, false},
		{"a read past the end stops where the file does", readPiece + 1, size, 4, size - readPiece - 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			buf := make([]byte, c.len)
			n, err := readAt(f, buf, c.off, c.readers)
			if n != c.wantN || (err != nil) != c.wantEOF || (c.wantEOF && !errors.Is(err, io.EOF)) {
				t.Fatalf("read %d bytes, err %v; want %d bytes, EOF %v", n, err, c.wantN, c.wantEOF)
			}
			if !bytes.Equal(buf[:n], data[c.off:c.off+int64(n)]) {
				t.Fatal("the bytes read differ from the file's")
			}
		})
	}
}
