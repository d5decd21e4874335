package runner_test

import (
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/metrics"
)

// modelErrors sums factline_model_errors_total over every label.
func modelErrors(t *testing.T) float64 {
	t.Helper()
	return counterTotal(t, "factline_model_errors_total")
}

// counterTotal sums the counter named name over every label.
func counterTotal(t *testing.T, name string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// An operator's cancel during a model call stops the call; it is not a
// model error, and does not count toward FactlineModelErrors.
func TestCancelDuringAModelCallIsNoModelError(t *testing.T) {
	e := start(t)
	s := `turns:
  - calls:
      - {id: w, name: write_file, args: {path: a.txt, content: x}}
    delay: 5m
`
	e.start(fixtureCase(t, "{steps: 4}"), s, "cancel-model")
	e.waitFact("cancel-model", func(f events.Fact) bool { return f.Kind() == events.KindTurnStarted })
	before := modelErrors(t)
	must(t, e.b.Controls().Send(e.ctx, "suite", "cancel-model", events.Control{Signal: events.SignalCancel, Reason: "enough"}))
	_, end := e.wait("cancel-model")
	if end.Status != events.RunCancelled {
		t.Fatalf("ended %s/%q", end.Status, end.Reason)
	}
	if after := modelErrors(t); after != before {
		t.Fatalf("the cancel counted %v model errors", after-before)
	}
}
