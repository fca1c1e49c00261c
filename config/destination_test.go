package config

import "testing"

func TestPartsInFlightFollowTheBudgetUnlessSet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    int
		part   Size
		budget Size
		want   int
	}{
		{"a small budget keeps the floor", 0, 0, 128 * MiB, DefaultMaxPartsInFlight},
		{"the least default budget holds a quarter of itself in parts", 0, 0, 768 * MiB, 12},
		{"a large budget stops at the cap", 0, 0, 16 * GiB, AutoMaxPartsInFlight},
		{"larger parts mean fewer of them", 0, 64 * MiB, 4 * GiB, 16},
		{"a set value wins whatever the budget", 5, 0, 16 * GiB, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Destination{MaxPartsInFlight: tc.set, PartSize: tc.part}.WithDefaults()
			if got := d.PartsInFlight(int64(tc.budget)); got != tc.want {
				t.Fatalf("PartsInFlight(%d) = %d, want %d", tc.budget, got, tc.want)
			}
		})
	}
}
