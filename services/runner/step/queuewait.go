package step

import "github.com/factline/factline/events"

// QueueWaitMs is the time, in milliseconds, the run's model calls waited
// for slots of a model limit the fleet shares, as their replies recorded
// it. The wall-time budget does not count it: a run is not charged for a
// crowded provider. A wait whose reply was never committed (its runner
// died) is not here, and so is charged.
func QueueWaitMs(facts []events.Fact) uint64 {
	var ms uint64
	for _, f := range facts {
		if r, ok := f.Body.(events.ModelReplied); ok {
			ms += r.QueueWaitMs
		}
	}
	return ms
}
