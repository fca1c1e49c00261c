package main

import (
	"strings"
	"testing"
)

func TestEveryNamedDataSetMakesFramesOfItsType(t *testing.T) {
	for _, tc := range []struct {
		data, name, dtype string
	}{
		{"camera", "bright", "uint16"},
		{"bright", "bright", "uint16"},
		{"dim", "dim", "uint16"},
		{"flat", "flat", "uint16"},
		{"8bit", "8bit", "uint8"},
		{"8bit-saturated", "8bit-saturated", "uint8"},
		{"mix", "mix", "uint16"},
	} {
		t.Run(tc.data, func(t *testing.T) {
			src, err := newFrameSource(tc.data, 64)
			if err != nil {
				t.Fatal(err)
			}
			if src.name != tc.name || src.dtype != tc.dtype || src.fill == nil {
				t.Fatalf("--data %s: name %q, dtype %s; want %q, %s, generated", tc.data, src.name, src.dtype, tc.name, tc.dtype)
			}
			elem := 2
			if tc.dtype == "uint8" {
				elem = 1
			}
			frame := make([]byte, 64*64*elem)
			src.fill(frame, 0)
			if strings.Count(string(frame), "\x00") == len(frame) {
				t.Fatalf("--data %s: frame 0 is all zeros", tc.data)
			}
		})
	}
}

func TestAnUnknownDataSetNamesTheChoices(t *testing.T) {
	_, err := newFrameSource("no-such-set", 64)
	if err == nil || !strings.Contains(err.Error(), "8bit-saturated") {
		t.Fatalf("got %v, want the named sets listed", err)
	}
}
