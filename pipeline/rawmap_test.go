package pipeline

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/zspool/zspool/internal/acqtest"
)

// sources are the two ways Convert gets epochs of a raw file.
var sources = []struct {
	name string
	open func(t *testing.T, f *os.File, first, frames, epochFrames, frameBytes int64) EpochSource
}{
	{"read into buffers", func(_ *testing.T, f *os.File, first, frames, epochFrames, frameBytes int64) EpochSource {
		return NewEpochReader(context.Background(), f, "r.raw", first, frames, epochFrames, frameBytes)
	}},
	{"mapped", func(t *testing.T, f *os.File, first, frames, epochFrames, frameBytes int64) EpochSource {
		m, err := NewEpochMapper(context.Background(), f, "r.raw", first, frames, epochFrames, frameBytes)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}},
}

func TestEverySourceResumesAtALaterEpochAndGivesAShortLastOne(t *testing.T) {
	// Frames of 3000 bytes, so that epochs start inside pages. 7 frames
	// in epochs of 3 (0-2, 3-5, 6), from epoch 1 on.
	const frameBytes = 3000
	data := make([]byte, 7*frameBytes)
	for i := range data {
		data[i] = byte(i*13 + i>>9)
	}
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			rd := src.open(t, rawFile(t, data), 1, 7, 3, frameBytes)
			defer rd.Close()
			var frames []int64
			for {
				e, ok := rd.Next()
				if !ok {
					break
				}
				off := e.Index * 3 * frameBytes
				if !bytes.Equal(e.Data, data[off:off+e.Frames*frameBytes]) {
					t.Fatalf("epoch %d: its bytes differ from the file's at byte %d", e.Index, off)
				}
				frames = append(frames, e.Frames)
				rd.Release(e)
			}
			if err := rd.Err(); err != nil {
				t.Fatal(err)
			}
			if len(frames) != 2 || frames[0] != 3 || frames[1] != 1 {
				t.Fatalf("frames per epoch %v, want [3 1]", frames)
			}
		})
	}
}

func TestEverySourceReportsAFileShorterThanPlannedAsBadInput(t *testing.T) {
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			rd := src.open(t, rawFile(t, make([]byte, 25)), 0, 4, 1, 10) // planned 40 bytes
			defer rd.Close()
			n := 0
			for {
				e, ok := rd.Next()
				if !ok {
					break
				}
				n++
				rd.Release(e)
			}
			if err := rd.Err(); !IsInputError(err) {
				t.Fatalf("err = %v, want an input error about the shrunk file", err)
			}
			if n != 2 {
				t.Fatalf("%d epochs before the short one, want 2", n)
			}
		})
	}
}

// rawFile writes data to a raw file of the test's and opens it.
func rawFile(t *testing.T, data []byte) *os.File {
	t.Helper()
	return acqtest.OpenRaw(t, filepath.Join(t.TempDir(), "t.raw"), data)
}

func TestEpochMapperKeepsTwoEpochsMappedAndCloseUnmapsWhatIsLeft(t *testing.T) {
	const frameBytes = 4096
	f := rawFile(t, make([]byte, 10*frameBytes))
	m, err := NewEpochMapper(context.Background(), f, "m.raw", 0, 10, 1, frameBytes)
	if err != nil {
		t.Fatal(err)
	}
	// Held the way Convert holds epochs for a CPU engine with two rows in
	// flight: each released after the next one is taken.
	var held *Epoch
	for i := 0; i < 6; i++ {
		e, ok := m.Next()
		if !ok {
			t.Fatalf("the mapper stopped after %d epochs: %v", i, m.Err())
		}
		if held != nil {
			m.Release(*held)
		}
		held = &e
		m.mu.Lock()
		n := len(m.mapped)
		m.mu.Unlock()
		if n > 2 {
			t.Fatalf("epoch %d: %d epochs mapped, want at most 2", i, n)
		}
	}
	m.Close()
	if len(m.mapped) != 0 {
		t.Fatalf("%d epochs still mapped after Close", len(m.mapped))
	}
	m.Release(*held) // after Close: a no-op, not a second munmap
}

func TestGuardTurnsAMappingTheFileShrankUnderIntoAnInputError(t *testing.T) {
	const size = 64 << 10
	f := rawFile(t, bytes.Repeat([]byte{7}, size))
	m, err := NewEpochMapper(context.Background(), f, "g.raw", 0, 1, 1, size)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e, ok := m.Next()
	if !ok {
		t.Fatal(m.Err())
	}
	if err := os.Truncate(f.Name(), 0); err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, size)
	err = Guard(func() { copy(dst, e.Data) })
	if !IsInputError(err) {
		t.Fatalf("reading a mapping whose file was truncated: err = %v, want an input error", err)
	}
}

func TestGuardLetsEveryOtherPanicThrough(t *testing.T) {
	boom := errors.New("boom")
	defer func() {
		if r := recover(); r != boom {
			t.Fatalf("recovered %v, want the panic Guard's function raised", r)
		}
	}()
	_ = Guard(func() { panic(boom) })
	t.Fatal("Guard swallowed a panic")
}
