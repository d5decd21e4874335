package stop_test

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/decider/stop"
)

// genCall draws one call: edits that apply (possibly back to the fixture)
// or are refused, reads, declared checks that pass (at the current or an
// older epoch), fail or are deferred, and the completion claim.
func genCall(t *rapid.T, r *run, label string) call {
	checks := []string{"tests", "lint"}
	switch rapid.IntRange(0, 8).Draw(t, label+".kind") {
	case 0, 1:
		return editTo("e", rapid.SampledFrom([]string{"fixture", "patch-a", "patch-b"}).Draw(t, label+".content"))
	case 2:
		return rejected("x")
	case 3:
		return read("f")
	case 4, 5:
		c := pass(rapid.SampledFrom(checks).Draw(t, label+".check"))
		if r.epoch > 1 && rapid.IntRange(0, 3).Draw(t, label+".stale") == 0 {
			c.epoch = r.epoch - 1
		}
		return c
	case 6:
		return fail(rapid.SampledFrom(checks).Draw(t, label+".check"), "boom")
	case 7:
		return pending(rapid.SampledFrom(checks).Draw(t, label+".check"))
	default:
		return claim()
	}
}

// genIntent draws the actor's intent, citing refs from the run so far, the
// turn's own calls, and refs that exist nowhere.
func genIntent(t *rapid.T, r *run, calls int, label string) events.ActorIntent {
	switch rapid.IntRange(0, 5).Draw(t, label+".intent") {
	case 0:
		return events.Continue()
	case 1:
		return events.ReportBlocked("stuck", "tests")
	case 2:
		return events.ProposeDone() // a natural finish
	}
	var refs []events.EvidenceRef
	for i := range rapid.IntRange(0, 3).Draw(t, label+".cites") {
		turn := uint32(rapid.IntRange(1, int(r.turn)+1).Draw(t, fmt.Sprintf("%s.cite%d.turn", label, i)))
		call := rapid.IntRange(1, max(calls, 1)+1).Draw(t, fmt.Sprintf("%s.cite%d.call", label, i))
		refs = append(refs, ref(turn, call))
	}
	return events.ProposeDone(refs...)
}

// oracle tracks, independently of the fold, each check's latest executed
// result and the current epoch and generation.
type oracle struct {
	epoch  uint64
	gen    uint32
	latest map[string]struct {
		passed bool
		epoch  uint64
		gen    uint32
	}
	refs map[events.EvidenceRef]events.CompletedDispatch
	gens map[events.EvidenceRef]uint32
}

func replay(facts []events.Fact) oracle {
	o := oracle{epoch: 1, latest: map[string]struct {
		passed bool
		epoch  uint64
		gen    uint32
	}{}, refs: map[events.EvidenceRef]events.CompletedDispatch{}, gens: map[events.EvidenceRef]uint32{}}
	for _, f := range facts {
		o.gen = max(o.gen, f.TaskGeneration)
		tc, ok := f.Body.(events.TurnCompleted)
		if !ok {
			continue
		}
		for _, d := range tc.Evidence.Dispatches {
			o.refs[d.EvidenceRef], o.gens[d.EvidenceRef] = d, tc.Evidence.TaskGeneration
			if d.Mutation == events.MutationApplied {
				o.epoch++
			}
			switch v := d.Verification.Variant().(type) {
			case events.VerifyPassed:
				o.latest[d.Check] = struct {
					passed bool
					epoch  uint64
					gen    uint32
				}{true, v.SourceEpoch, tc.Evidence.TaskGeneration}
			case events.VerifyFailed:
				o.latest[d.Check] = struct {
					passed bool
					epoch  uint64
					gen    uint32
				}{false, v.SourceEpoch, tc.Evidence.TaskGeneration}
			}
		}
	}
	return o
}

// For random fact sequences, the decider never finishes done while a
// required check is failed, stale or missing; never turns a stall stop or
// escalation into done; cites only executed dispatches of the current task
// generation when done; and invents no evidence for blocked.
func TestPropertyNeverDoneWithFailedStaleOrMissingCheck(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := stop.Policy{
			Checks:       []stop.Check{{ID: "tests", Command: "go test"}, {ID: "lint", Command: "vet"}},
			Requirements: []stop.Requirement{{ID: "tests", Check: "tests"}},
		}
		if rapid.Bool().Draw(t, "lint required") {
			p.Requirements = append(p.Requirements, stop.Requirement{ID: "lint", Check: "lint"})
		}
		if rapid.Bool().Draw(t, "write required") {
			p.Requirements = append(p.Requirements, stop.Requirement{ID: stop.WriteRequirement, Write: true})
			p.FixtureDigest = events.DigestOf([]byte("fixture"))
		}
		if rapid.Bool().Draw(t, "evidence requirement") {
			p.Requirements = append(p.Requirements, stop.Requirement{ID: "explains"})
		}
		r := newRun(t)
		for i := range rapid.IntRange(1, 20).Draw(t, "turns") {
			if rapid.IntRange(0, 14).Draw(t, fmt.Sprintf("steer%d", i)) == 0 {
				r.steer("changed task")
			}
			calls := make([]call, rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("calls%d", i)))
			for j := range calls {
				calls[j] = genCall(t, r, fmt.Sprintf("t%d.c%d", i, j))
			}
			intent := genIntent(t, r, len(calls), fmt.Sprintf("t%d", i))
			n := r.step(intent, calls...)
			var a *events.StallAction
			switch rapid.IntRange(0, 9).Draw(t, fmt.Sprintf("stall%d", i)) {
			case 0:
				a = stallStop("idle_turns")
			case 1:
				e := events.Escalate(events.StallEscalate{Cause: "alternation", Target: "human", Evidence: []events.EvidenceRef{}})
				a = &e
			case 2:
				a = stallRetry("repeated_observation")
			}
			if rapid.IntRange(0, 14).Draw(t, fmt.Sprintf("late steer%d", i)) == 0 {
				r.steer("changed while deciding")
			}
			d := r.decide(n, a, p)
			f, ok := d.Result.Variant().(events.StopFinish)
			if !ok {
				continue
			}
			if _, blocked := intent.Variant().(events.IntentReportBlocked); blocked && f.Status == events.FinishBlocked && len(f.Evidence) > 0 {
				t.Fatalf("turn %d: blocked with invented evidence %v", n, f.Evidence)
			}
			if f.Status != events.FinishDone {
				continue
			}
			if a != nil && a.Type() != "retry" {
				t.Fatalf("turn %d: stall %s became done", n, a.Type())
			}
			o := replay(r.facts)
			for _, q := range p.Requirements {
				if q.Check == "" {
					continue
				}
				l, ok := o.latest[q.Check]
				switch {
				case !ok || l.gen != o.gen:
					t.Fatalf("turn %d: done while check %s is missing in generation %d", n, q.Check, o.gen)
				case !l.passed:
					t.Fatalf("turn %d: done while check %s failed", n, q.Check)
				case l.epoch != o.epoch:
					t.Fatalf("turn %d: done while check %s is stale (passed at %d, now %d)", n, q.Check, l.epoch, o.epoch)
				}
			}
			for _, e := range f.Evidence {
				dd, ok := o.refs[e]
				if !ok || dd.Tool == "task_complete" || dd.Disposition != events.DispositionExecuted || o.gens[e] != o.gen {
					t.Fatalf("turn %d: done cites %s, which is not an executed dispatch of the current task", n, e)
				}
			}
		}
	})
}
