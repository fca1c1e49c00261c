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

func TestEpochReaderResumesAtALaterEpochAndReadsAShortLastOne(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.raw")
	data := make([]byte, 7*10) // 7 frames of 10 bytes
	for i := range data {
		data[i] = byte(i)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(p)
	defer f.Close()
	// Epochs of 3 frames: 0-2, 3-5, 6. Start at epoch 1.
	r := NewEpochReader(context.Background(), f, "r.raw", 1, 7, 3, 10)
	var got []int64
	for {
		e, ok := r.Next()
		if !ok {
			break
		}
		if e.Data[0] != byte(e.Index*30) {
			t.Fatalf("epoch %d starts with byte %d", e.Index, e.Data[0])
		}
		got = append(got, e.Frames)
		r.Release(e)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != 3 || got[1] != 1 {
		t.Fatalf("frames per epoch %v, want [3 1]", got)
	}
}

func TestEpochReaderReportsAFileThatShrankWhileReading(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.raw")
	if err := os.WriteFile(p, make([]byte, 25), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(p)
	defer f.Close()
	r := NewEpochReader(context.Background(), f, "s.raw", 0, 4, 1, 10) // planned 40 bytes
	for {
		e, ok := r.Next()
		if !ok {
			break
		}
		r.Release(e)
	}
	if err := r.Err(); !IsInputError(err) {
		t.Fatalf("err = %v, want an input error about the shrunk file", err)
	}
}

func TestReadAtInPiecesFillsTheBufferOrStopsAtTheFirstShortPiece(t *testing.T) {
	size := 4*readPiece + 12345
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>13)
	}
	p := filepath.Join(t.TempDir(), "pieces.raw")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
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
