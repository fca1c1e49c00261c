package config

import "testing"

func TestTheDefaultMemoryBudgetIsAnEighthOfTheHostAtLeast768MiB(t *testing.T) {
	host, where := HostMemory()
	if host <= 0 {
		t.Fatalf("HostMemory found nothing (%s): /proc/meminfo is on every Linux host", where)
	}
	got := DefaultMemoryBudget()
	want := max(MinDefaultMemoryBudget, Size(host/8)/MiB*MiB)
	if got != want || got < MinDefaultMemoryBudget {
		t.Errorf("DefaultMemoryBudget = %s on a host of %s (%s), want %s", got, Size(host), where, want)
	}
}
