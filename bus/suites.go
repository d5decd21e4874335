package bus

import (
	"context"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
)

// SubmittedSuites returns the suites whose suite.submitted the log holds,
// each once, in the order they were first submitted. It reads those
// facts alone (direct gets, which every reading role may make), never
// the suites' runs: a command told of a suite the log does not hold
// names the ones it does.
func (b *Bus) SubmittedSuites(ctx context.Context) ([]string, error) {
	filter := events.FactPrefix + ".*." + events.SuiteScope + "." + string(events.KindSuiteSubmitted)
	var suites []string
	err := b.directBatch(ctx, FactsStream, filter, 1, func(m *nats.Msg, _ uint64) {
		suite, _, _, err := events.ParseFactSubject(m.Header.Get(jetstream.SubjectHeader))
		if err == nil && !slices.Contains(suites, suite) {
			suites = append(suites, suite)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("list the suites submitted: %w", err)
	}
	return suites, nil
}
