package faultproxy

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// Fault is what the proxy does to one request.
type Fault int

const (
	None                 Fault = iota // forward untouched
	Status500                         // 500 InternalError, not forwarded
	SlowDown503                       // 503 SlowDown, not forwarded
	ResetMidBody                      // forwarded; reply cut by a TCP RST after half its body
	Delay                             // forwarded after Rule.Delay
	DropCompleteResponse              // forwarded; response dropped, connection closed
	numFaults
)

func (f Fault) String() string {
	if f < 0 || f >= numFaults {
		return fmt.Sprintf("Fault(%d)", int(f))
	}
	return [...]string{"None", "Status500", "SlowDown503", "ResetMidBody",
		"Delay", "DropCompleteResponse"}[f]
}

// DefaultDelay is the Delay fault's wait when Rule.Delay is zero;
// MaxDelay bounds it.
const (
	DefaultDelay = 200 * time.Millisecond
	MaxDelay     = 30 * time.Second
)

// Rule faults a Fraction of the requests for one operation (or "*").
// A request follows the first rule whose Op matches it.
type Rule struct {
	Op       string        // operation name from Classify, or "*"
	Fraction float64       // 0..1 of matching requests that get a fault
	Faults   []Fault       // chosen uniformly for a faulted request
	Delay    time.Duration // wait for the Delay fault; 0 means DefaultDelay
}

func (r Rule) validate() error {
	switch {
	case !slices.Contains(ops, r.Op):
		return fmt.Errorf("faultproxy: unknown operation %q", r.Op)
	case math.IsNaN(r.Fraction) || r.Fraction < 0 || r.Fraction > 1:
		return fmt.Errorf("faultproxy: %s: fraction %v outside 0..1", r.Op, r.Fraction)
	case r.Fraction > 0 && len(r.Faults) == 0:
		return fmt.Errorf("faultproxy: %s: fraction %v with no faults", r.Op, r.Fraction)
	case r.Delay < 0 || r.Delay > MaxDelay:
		return fmt.Errorf("faultproxy: %s: delay %v outside 0..%v", r.Op, r.Delay, MaxDelay)
	case slices.ContainsFunc(r.Faults, func(f Fault) bool { return f < 0 || f >= numFaults }):
		return fmt.Errorf("faultproxy: %s: unknown fault in %v", r.Op, r.Faults)
	}
	return nil
}

// Counts is what one operation saw: requests, and faults by kind (None is
// never counted as a fault).
type Counts struct {
	Requests int64
	Faulted  map[Fault]int64
}

// decide draws once per request that a rule matches, so a fixed seed and
// request order give the same faults. The caller holds p.mu.
func (p *Proxy) decide(op string) (Fault, time.Duration) {
	for _, r := range p.rules {
		if r.Op != op && r.Op != "*" {
			continue
		}
		if p.rng.Float64() >= r.Fraction {
			return None, 0
		}
		return r.Faults[p.rng.IntN(len(r.Faults))], cmp.Or(r.Delay, DefaultDelay)
	}
	return None, 0
}
