package step

import "github.com/factline/factline/events"

// CurrentLease is the newest claim's lease in a run (0: never claimed). The
// next claim takes the one after it.
func CurrentLease(facts []events.Fact) uint32 {
	var l uint32
	for _, f := range facts {
		if c, ok := f.Body.(events.RunClaimed); ok {
			l = max(l, c.Lease)
		}
	}
	return l
}

// FinishDecided reports whether the run's last stop.decided finishes it:
// from then on no steer is taken in.
func FinishDecided(facts []events.Fact) bool {
	for i := len(facts) - 1; i >= 0; i-- {
		if d, ok := facts[i].Body.(events.StopDecided); ok {
			_, fin := d.Decision.Result.Variant().(events.StopFinish)
			return fin
		}
	}
	return false
}
