package stall_test

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/staller/stall"
)

// genCall draws one call of a random turn: edits that apply, change nothing
// or are refused; reads; declared checks that pass, fail (fully or
// partially reported), are deferred, or pass on an older epoch; and the
// completion claim.
func genCall(t *rapid.T, r *run, label string) call {
	checks := []string{"tests", "lint"}
	switch rapid.IntRange(0, 9).Draw(t, label+".kind") {
	case 0:
		return editTo("e", rapid.SampledFrom([]string{"fixture", "patch-a", "patch-b", "patch-c"}).Draw(t, label+".content"))
	case 1:
		return noopEdit(rapid.SampledFrom([]string{"a", "b"}).Draw(t, label+".args"))
	case 2:
		return rejectedEdit("x")
	case 3:
		return cmd("status", rapid.SampledFrom([]string{"same", "changed"}).Draw(t, label+".out"))
	case 4, 5:
		return pass(rapid.SampledFrom(checks).Draw(t, label+".check"))
	case 6:
		c := pass(rapid.SampledFrom(checks).Draw(t, label+".check"))
		if r.epoch > 1 {
			c.epoch = r.epoch - 1 // ran before the last edit
		}
		return c
	case 7, 8:
		n := rapid.IntRange(0, 3).Draw(t, label+".errors")
		diags := []string{"e1", "e2", "e3"}[:n]
		if n == 0 {
			diags = []string{"failed"}
		}
		return fail(rapid.SampledFrom(checks).Draw(t, label+".check"), rapid.Bool().Draw(t, label+".complete"), diags...)
	default:
		if rapid.Bool().Draw(t, label+".claim") {
			return taskComplete(`{"status":"done"}`)
		}
		return pending(rapid.SampledFrom(checks).Draw(t, label+".check"))
	}
}

// oracleUnmet computes, independently of the fold, which requirements the
// run's facts do not show met: a check requirement needs its check's latest
// executed result to be a pass at the current epoch in the current task
// generation; the write requirement an applied change that still stands;
// anything else is unmet.
func oracleUnmet(facts []events.Fact, reqs []stall.Requirement, fixture events.Digest) []events.RequirementID {
	type result struct {
		passed bool
		epoch  uint64
		gen    uint32
	}
	latest := map[string]result{}
	epoch, gen := uint64(1), uint32(0)
	applied := false
	var digest events.Digest
	for _, f := range facts {
		gen = max(gen, f.TaskGeneration)
		tc, ok := f.Body.(events.TurnCompleted)
		if !ok {
			continue
		}
		for _, d := range tc.Evidence.Dispatches {
			if d.Mutation == events.MutationApplied {
				epoch++
				applied = true
			}
			if d.Digest != "" {
				digest = d.Digest
			}
			if d.Check == "" {
				continue
			}
			switch v := d.Verification.Variant().(type) {
			case events.VerifyPassed:
				latest[d.Check] = result{true, v.SourceEpoch, gen}
			case events.VerifyFailed:
				latest[d.Check] = result{false, v.SourceEpoch, gen}
			}
		}
	}
	var out []events.RequirementID
	for _, q := range reqs {
		met := false
		switch {
		case q.Check != "":
			l, ok := latest[q.Check]
			met = ok && l.passed && l.epoch == epoch && l.gen == gen
		case q.Write:
			met = applied && digest != fixture
		}
		if !met {
			out = append(out, q.ID)
		}
	}
	return out
}

// For random fact sequences, the staller never emits stop with fewer unmet
// requirements than the run has, and every observation makes a valid fact.
func TestPropertyStopNeverUnderstatesUnmet(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		threshold := func(name string) int { return rapid.IntRange(0, 4).Draw(t, name) }
		p := stall.Policy{
			RepeatedFailure: threshold("repeated_failure"), RepeatedObservation: threshold("repeated_observation"),
			RepeatedError: threshold("repeated_error"), IdleTurns: threshold("idle_turns"),
			Alternation: threshold("alternation"), FailingVerifications: threshold("failing_verifications"),
			RepairBudget: rapid.IntRange(0, 3).Draw(t, "repair_budget"),
			Requirements: []stall.Requirement{
				{ID: "tests", Check: "tests"}, {ID: "lint", Check: "lint"}, {ID: "answer"}, {ID: stall.WriteRequirement, Write: true},
			},
			FixtureDigest: events.DigestOf([]byte("fixture")),
		}
		r := newRun(t, p)
		turns := rapid.IntRange(1, 25).Draw(t, "turns")
		for i := range turns {
			if rapid.IntRange(0, 19).Draw(t, fmt.Sprintf("steer%d", i)) == 0 {
				r.steer("new instruction")
			}
			n := rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("calls%d", i))
			calls := make([]call, n)
			for j := range calls {
				calls[j] = genCall(t, r, fmt.Sprintf("t%d.c%d", i, j))
			}
			o := r.step(calls...)
			if o.Action == nil {
				continue
			}
			if len(o.Checkpoint.Armed) == 0 {
				t.Fatalf("turn %d: action %s with nothing armed", r.turn, o.Action.Type())
			}
			s, ok := o.Action.Variant().(events.StallStop)
			if !ok {
				continue
			}
			for _, u := range oracleUnmet(r.facts, p.Requirements, p.FixtureDigest) {
				if !slices.Contains(s.Unmet, u) {
					t.Fatalf("turn %d: stop lists unmet %v, but the run has %q unmet too", r.turn, s.Unmet, u)
				}
			}
		}
	})
}
