package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// errNotTimed is returned by suiteSpan for a suite whose facts do not mark
// both ends of its time.
var errNotTimed = errors.New("suite cannot be timed from its facts")

// suiteSpan is how long a suite took by the server's own timestamps: from
// the first of its suite.submitted and run.requested facts being stored to
// its suite.reported being stored. Nothing the benchmark does around the
// suite (writing and publishing its files, waiting to see the report) is
// counted, so a wait that notices the report late does not make the
// suite look slow.
func suiteSpan(facts []stamped) (time.Duration, error) {
	var from, to time.Time
	for _, s := range facts {
		switch s.f.Body.(type) {
		case events.SuiteSubmitted, events.RunRequested:
			if from.IsZero() || s.at.Before(from) {
				from = s.at
			}
		case events.SuiteReported:
			if to.IsZero() || s.at.Before(to) {
				to = s.at
			}
		}
	}
	switch {
	case from.IsZero():
		return 0, fmt.Errorf("%w: no suite.submitted or run.requested", errNotTimed)
	case to.IsZero():
		return 0, fmt.Errorf("%w: no suite.reported", errNotTimed)
	case to.Before(from):
		return 0, fmt.Errorf("%w: suite.reported at %v is before its start at %v", errNotTimed, to, from)
	}
	return to.Sub(from), nil
}

// timeSuite reads a reported suite's own facts (its suite-scope facts and
// every run's run.requested) and times it with suiteSpan. Two reads, as a
// consumer's filters may not overlap and the suite scope's subjects match
// both patterns' wildcards.
func timeSuite(ctx context.Context, b *bus.Bus, suite string) (time.Duration, error) {
	var facts []stamped
	for _, filter := range []string{
		events.RunFilter(suite, events.SuiteScope),
		events.FactPrefix + "." + suite + ".*." + string(events.KindRunRequested),
	} {
		got, err := readStamped(ctx, b, filter)
		if err != nil {
			return 0, fmt.Errorf("time suite %s: read %s: %w", suite, filter, err)
		}
		facts = append(facts, got...)
	}
	d, err := suiteSpan(facts)
	if err != nil {
		return 0, fmt.Errorf("time suite %s: %w", suite, err)
	}
	return d, nil
}
