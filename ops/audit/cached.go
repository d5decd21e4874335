package audit

import (
	"fmt"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner/step"
)

// RuleCacheOrigin: a reply recorded as served from the response cache is
// the reply the log committed at the call it cites, to the same request,
// by the same provider and cache identity (step.CheckCached: the rules
// the runner applies before it serves a hit).
const RuleCacheOrigin = "cache-origin"

// runFacts finds a run's facts by suite and run: those audited, then
// those given only as origins.
type runFacts func(suite, run string) []events.Fact

// checkCached checks every cached reply of a run against its origin, and,
// where at (each audited fact's index in the log) holds both, that the
// origin's reply was committed before the hit: a runner serves a hit only
// from a reply the log it read holds.
func checkCached(r *run, facts runFacts, at map[[16]byte]int) []Violation {
	var out []Violation
	for i, f := range r.facts {
		hit, ok := f.Body.(events.ModelReplied)
		if !ok || hit.Cached == nil {
			continue
		}
		c := hit.Cached
		asked := step.FindOrigin(r.facts[:i], hit.Turn).Started
		if asked == nil {
			out = append(out, Violation{r.suite, r.name, RuleCacheOrigin, fmt.Sprintf(
				"turn %d's reply %s was served from the cache, and the turn was never started", hit.Turn, factAt(f))})
			continue
		}
		request := asked.Body.(events.TurnStarted).ContextDigest
		origin := step.FindOrigin(facts(c.Suite, c.Run), c.Turn)
		if err := step.CheckCached(hit, request, origin); err != nil {
			cited := fmt.Sprintf("%s/%s turn %d", c.Suite, c.Run, c.Turn)
			if origin.Replied != nil {
				cited += " " + factAt(*origin.Replied)
			}
			out = append(out, Violation{r.suite, r.name, RuleCacheOrigin, fmt.Sprintf(
				"turn %d's reply %s was served from the cache citing %s: %v", hit.Turn, factAt(f), cited, err)})
			continue
		}
		if o, ok := at[origin.Replied.ID]; ok && o > at[f.ID] {
			out = append(out, Violation{r.suite, r.name, RuleCacheOrigin, fmt.Sprintf(
				"turn %d's reply %s was served from the cache citing %s/%s turn %d %s, which the log committed after it: a hit is served only from a reply the log already holds",
				hit.Turn, factAt(f), c.Suite, c.Run, c.Turn, factAt(*origin.Replied))})
		}
	}
	return out
}

// factAt names a fact by its ID and its position in its run.
func factAt(f events.Fact) string {
	return fmt.Sprintf("(fact %s, position %d)", f.ID, f.Position)
}

// factOf names a fact by its kind, its run, its ID and its position: for
// a violation of another run's or of the suite's.
func factOf(f events.Fact) string {
	return fmt.Sprintf("%s of %s/%s %s", f.Kind(), f.Suite, f.Run, factAt(f))
}
