package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/factline/factline/events"
	"github.com/factline/factline/suites"
)

// suiteStops remembers, per suite, whether it can stop early and whether
// it has: a runner leaves the runs not yet started of a stopped suite
// unrun (docs/suite.md#stopping-early).
type suiteStops struct {
	mu sync.Mutex
	// known: false = may stop (look again), true = stopped or never stops.
	known   map[string]bool
	stopped map[string]bool
}

// stopped reports whether suite has stopped early. A suite without a
// stopping rule is looked up once; one with a rule is looked up at each
// start until it stops.
func (s *Service) suiteStopped(ctx context.Context, suite string) (bool, error) {
	st := &s.stops
	st.mu.Lock()
	if st.known == nil {
		st.known, st.stopped = map[string]bool{}, map[string]bool{}
	}
	if st.known[suite] {
		stopped := st.stopped[suite]
		st.mu.Unlock()
		return stopped, nil
	}
	st.mu.Unlock()
	log, err := s.bus.LoadRun(ctx, suite, events.SuiteScope)
	if err != nil {
		return false, fmt.Errorf("load suite %s: %w", suite, err)
	}
	var spec events.Digest
	stopped := false
	for _, r := range log.Records {
		switch b := r.Fact.Body.(type) {
		case events.SuiteSubmitted:
			if spec == "" {
				spec = b.SpecDigest
			}
		case events.SuiteStopped:
			stopped = true
		}
	}
	final := stopped
	if !stopped && spec != "" {
		data, err := s.bus.Blobs().Get(ctx, spec)
		if err != nil {
			return false, inputErr("suite spec", err)
		}
		var sp suites.Spec
		if err := json.Unmarshal(data, &sp); err != nil {
			return false, fmt.Errorf("%w: suite spec %s: %v", errBadInput, spec, err)
		}
		final = sp.Stopping == nil
	}
	st.mu.Lock()
	st.known[suite], st.stopped[suite] = final, stopped
	st.mu.Unlock()
	return stopped, nil
}
