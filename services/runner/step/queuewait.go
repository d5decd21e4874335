package step

import (
	"time"

	"github.com/factline/factline/events"
)

// QueueWait is the time the run's model calls waited for slots of a model
// limit the fleet shares, as their replies recorded it. The wall-time
// budget does not count it: a run is not charged for a crowded provider.
// A wait whose reply was never committed (its runner died) is not here,
// and so is charged.
func QueueWait(facts []events.Fact) time.Duration {
	var ms uint64
	for _, f := range facts {
		if r, ok := f.Body.(events.ModelReplied); ok {
			ms += r.QueueWaitMs
		}
	}
	return time.Duration(ms) * time.Millisecond
}
