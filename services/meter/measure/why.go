package measure

import (
	"cmp"
	"slices"
	"strings"

	"github.com/factline/factline/events"
)

// What a Why says of its runs.
const (
	// WhyHarnessError: the runs ended errored (a harness error), for the
	// reason their run.ended gives.
	WhyHarnessError = "harness error"
	// WhyExcluded: the runs count for nothing in the report, for the
	// reason the report gives (an ending not among the suite's valid
	// outcomes, a suite stopped early).
	WhyExcluded = "excluded"
)

// Why is one reason that made runs of a report harness errors or
// excluded: how many runs it holds and one of them, to look at first.
type Why struct {
	Kind    string `json:"kind"`
	Reason  string `json:"reason"`
	Runs    int    `json:"runs"`
	Example string `json:"example"`
}

// Whys groups a report's harness errors and exclusions by reason: every
// attempt whose run ended errored under its run.ended reason, every other
// excluded attempt under the report's reason. Harness errors come first,
// then the reasons holding the most runs; the example is the first run of
// a reason in the report's order.
func Whys(r Report) []Why {
	var whys firstSeen[[2]string, Why]
	for _, a := range r.Attempts {
		var kind, reason string
		switch {
		case a.Status == events.RunErrored:
			kind, reason = WhyHarnessError, a.EndReason
		case a.Outcome == OutcomeExcluded:
			kind, reason = WhyExcluded, a.Reason
		default:
			continue
		}
		// One line each: a reason quoting a provider's body may hold
		// line breaks.
		reason = strings.Join(strings.Fields(reason), " ")
		whys.row([2]string{kind, reason}, Why{Kind: kind, Reason: reason, Example: a.Run}).Runs++
	}
	out := whys.rows
	slices.SortStableFunc(out, func(a, b Why) int {
		if a.Kind != b.Kind {
			if a.Kind == WhyHarnessError {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.Runs, a.Runs)
	})
	return out
}
