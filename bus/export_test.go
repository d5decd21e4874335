package bus

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/events"
)

// LoadRunByScan loads a run with the filtered-scan fallback only, so that
// benchmarks can show what the run links save.
func (b *Bus) LoadRunByScan(ctx context.Context, suite, run string) (RunLog, error) {
	log := RunLog{Suite: suite, Run: run}
	err := b.directBatch(ctx, FactsStream, events.RunFilter(suite, run), 1, func(m *nats.Msg, _ uint64) { addMessage(&log, m) })
	return log, err
}
