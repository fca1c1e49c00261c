package pipeline

import (
	"bytes"
	"testing"
)

func TestAKeptRowOwnsItsBytesAndGivesTheLentRowBack(t *testing.T) {
	data := []byte("chunk bytes")
	given := 0
	o := LevelOutput{Level: 1, Epoch: 3, Lease: NewLease(func() { given++ }),
		Shards: []ShardOut{{Inner: 2, Chunks: []ChunkOut{{Slot: 0, Data: data}, {Slot: 1}}}}}
	k := Keep(o)
	if given != 1 {
		t.Fatalf("the lease was given back %d times, want once", given)
	}
	// The engine reuses the row's memory once it has it back.
	copy(data, "XXXXXXXXXXX")
	o.Shards[0].Chunks[0] = ChunkOut{Slot: 9}
	if k.Lease != nil || k.Level != 1 || k.Epoch != 3 || len(k.Shards) != 1 || k.Shards[0].Inner != 2 {
		t.Fatalf("kept %+v", k)
	}
	got := k.Shards[0].Chunks
	if len(got) != 2 || got[0].Slot != 0 || !bytes.Equal(got[0].Data, []byte("chunk bytes")) || got[1].Slot != 1 || got[1].Data != nil {
		t.Fatalf("kept chunks %+v, want the row's as it was, the absent chunk still absent", got)
	}
}

func TestKeepingARowThatIsNotLentCopiesIt(t *testing.T) {
	data := []byte{1, 2, 3}
	k := Keep(LevelOutput{Shards: []ShardOut{{Chunks: []ChunkOut{{Data: data}}}}})
	data[0] = 9
	if k.Shards[0].Chunks[0].Data[0] != 1 {
		t.Fatal("the kept row shares the engine's bytes")
	}
}
