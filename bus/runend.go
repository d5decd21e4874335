package bus

import (
	"context"

	"github.com/factline/factline/events"
)

// RunEnd asks the FACTS stream's leader for the sequence of the run's
// newest fact (0 for a run without facts). Unlike a load, which direct
// gets let any replica answer, it cannot be behind the leader: a writer
// that must know nobody else appended to the run since its own last
// append or read (a runner's fence before an external effect) compares
// it with the newest sequence it knows.
func (b *Bus) RunEnd(ctx context.Context, suite, run string) (uint64, error) {
	return b.leaderLastSeq(ctx, FactsStream, events.RunFilter(suite, run))
}
