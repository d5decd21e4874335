package bus

import (
	"context"
	"fmt"

	"github.com/factline/factline/events"
)

// NewestOfKind asks the FACTS stream's leader for the newest fact of kind
// in any suite: its stream sequence, suite and run (0 and empty names when
// the log holds none). A submitter's idle check uses it to tell a fleet
// with no runner from one whose runners are busy with other suites' runs
// (the submitter role may ask: $JS.API.STREAM.MSG.GET.FACTS).
func (b *Bus) NewestOfKind(ctx context.Context, kind events.Kind) (seq uint64, suite, run string, err error) {
	seq, subject, err := b.leaderLast(ctx, FactsStream, events.KindFilter(kind))
	if err != nil || seq == 0 {
		return 0, "", "", err
	}
	suite, run, _, err = events.ParseFactSubject(subject)
	if err != nil {
		return 0, "", "", fmt.Errorf("the newest %s fact: %w", kind, err)
	}
	return seq, suite, run, nil
}
