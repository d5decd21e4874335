package step

import (
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/factline/factline/events"
)

// genBody draws one fact body of the kinds the standing reads, over few
// turns and calls so that facts name each other often (a reply, dispatch
// or decision of the current turn, of an older one, of one never started).
func genBody(t *rapid.T, label string) events.Body {
	turn := rapid.Uint32Range(1, 3).Draw(t, label+".turn")
	call := events.CallID(rapid.SampledFrom([]string{"c1", "c2"}).Draw(t, label+".call"))
	var usage *events.Usage
	if rapid.Bool().Draw(t, label+".usage") {
		usage = &events.Usage{InputTokens: rapid.Uint64Range(0, 50).Draw(t, label+".in"), OutputTokens: 3}
		if rapid.Bool().Draw(t, label+".cost") {
			usage.Cost = cost(rapid.Uint64Range(0, 9).Draw(t, label+".costv"))
		}
	}
	switch rapid.IntRange(0, 11).Draw(t, label+".kind") {
	case 0:
		return events.TaskGenerationStarted{Generation: rapid.Uint32Range(1, 3).Draw(t, label+".gen")}
	case 1:
		return events.TurnStarted{Turn: turn, Reserve: rapid.Uint64Range(0, 9).Draw(t, label+".reserve")}
	case 2:
		ca := events.ControlAccepted{Control: events.ControlRef{ID: "k", Signal: events.SignalSteer}}
		if rapid.Bool().Draw(t, label+".oncall") {
			ca.CallID, ca.Control.Signal = call, events.SignalApprove
		}
		return ca
	case 3:
		return events.ModelReplied{Turn: turn, Usage: usage, QueueWaitMs: rapid.Uint64Range(0, 5).Draw(t, label+".wait")}
	case 4:
		in := events.DispatchIntended{Turn: turn, CallID: call, OperationID: "op-" + string(call)}
		if rapid.Bool().Draw(t, label+".child") {
			in.Delegation = &events.Delegation{Run: "child", Steps: 2, InputTokens: 5, Cost: 1}
		}
		return in
	case 5:
		dc := events.DispatchCompleted{Turn: turn, Dispatch: events.CompletedDispatch{CallID: call,
			Mutation: rapid.SampledFrom([]events.Mutation{events.MutationApplied, events.MutationNotApplicable}).Draw(t, label+".mut"),
			Outcome:  rapid.SampledFrom([]string{events.OutcomeUnknown, ""}).Draw(t, label+".outcome")}}
		if rapid.Bool().Draw(t, label+".digest") {
			dc.Dispatch.Digest = events.DigestOf([]byte(label))
		}
		if rapid.Bool().Draw(t, label+".err") {
			dc.Error = &events.ToolError{Code: "X", Message: "lost " + label}
		}
		if rapid.Bool().Draw(t, label+".childout") {
			dc.Child = &events.ChildOutcome{Run: "child", Steps: 1, Charged: 2, Usage: usage}
		}
		return dc
	case 6:
		return events.TurnCompleted{Evidence: events.RunEvidence{Turn: turn, ActorIntent: events.Continue()}}
	case 7:
		return events.StopDecided{Decision: events.StopDecision{Turn: turn, Result: events.ContinueWith("more")}}
	case 8:
		return events.StopDecided{Decision: events.StopDecision{Turn: turn, Result: events.Finish(events.StopFinish{Status: events.FinishDone})}}
	case 9:
		return events.RunClaimed{Runner: "r", Lease: rapid.Uint32Range(1, 3).Draw(t, label+".lease")}
	case 10:
		return events.ContextSummarised{Usage: usage, Reserve: 2}
	default:
		return events.RunEnded{Status: events.RunIncomplete}
	}
}

// genFacts draws a run's log: facts in order, each with its own ID.
func genFacts(t *rapid.T, label string) []events.Fact {
	n := rapid.IntRange(0, 40).Draw(t, label+".n")
	out := make([]events.Fact, n)
	for i := range out {
		out[i] = events.Fact{ID: events.NewID(), Run: "r1", TaskGeneration: 1, Position: uint64(i + 1), Body: genBody(t, label)}
	}
	return out
}

// reading is what the batch readings say of facts, read from the whole
// log: what a standing must say after folding the same facts.
type reading struct {
	Progress Progress
	Spend    Spend
	Wait     uint64
	Unknown  []UnknownOp
	Lease    uint32
	Finished bool
}

func readWhole(facts []events.Fact) reading {
	return reading{ReadProgress(facts), Tally(facts), QueueWaitMs(facts), UnknownOperations(facts), CurrentLease(facts), FinishDecided(facts)}
}

func readStanding(s *Standing) reading {
	return reading{s.Progress(), s.Spend(), s.QueueWaitMs(), s.UnknownOperations(), s.Lease(), s.FinishDecided()}
}

// sameReading compares two readings, an empty list of unknown operations
// alike whether nil or not.
func sameReading(a, b reading) bool {
	if len(a.Unknown) == 0 && len(b.Unknown) == 0 {
		a.Unknown, b.Unknown = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// The standing folded on, a few facts at a time, says at every prefix of
// the log exactly what the batch readings say of that prefix read whole.
func TestStandingFoldedOnEqualsTheWholeLogAtEveryPrefix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		facts := genFacts(t, "log")
		s := NewStanding()
		for end := 0; ; {
			before := s.Len()
			if n := s.Catch(facts[:end]); n != end-before {
				t.Fatalf("catching up from %d to %d facts folded %d", before, end, n)
			}
			if got, want := readStanding(s), readWhole(facts[:end]); !sameReading(got, want) {
				t.Fatalf("after %d facts the standing says\n%+v\nthe whole log\n%+v", end, got, want)
			}
			if end == len(facts) {
				break
			}
			end = min(end+rapid.IntRange(1, 4).Draw(t, "step"), len(facts))
		}
		// A caught-up standing folds nothing more for the same log.
		if n := s.Catch(facts); n != 0 {
			t.Fatalf("caught up %d facts of a log already folded", n)
		}
	})
}

// A log that does not extend what the standing folded (another run's, one
// a takeover rewrote the end of, a replica's that stops short) is folded
// from its start, and read as that log alone.
func TestStandingFoldsALogThatIsNoExtensionFromItsStart(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		first, other := genFacts(t, "first"), genFacts(t, "other")
		s := NewStanding()
		s.Catch(first)
		cut := rapid.IntRange(0, len(first)).Draw(t, "cut")
		for name, log := range map[string][]events.Fact{"other": other, "shorter": first[:cut]} {
			s.Catch(first)
			s.Catch(log)
			if s.Len() != len(log) {
				t.Fatalf("%s: standing covers %d facts, want %d", name, s.Len(), len(log))
			}
			if got, want := readStanding(s), readWhole(log); !sameReading(got, want) {
				t.Fatalf("%s: the standing says\n%+v\nthe log read whole\n%+v", name, got, want)
			}
		}
	})
}

// Catching up folds the facts since the last look only: a turn's read
// does not grow with the run.
func TestCatchingUpFoldsOnlyTheNewFacts(t *testing.T) {
	var facts []events.Fact
	s := NewStanding()
	for turn := uint32(1); turn <= 50; turn++ {
		facts = append(facts, factsOf(t, turnBodies(turn, "t", "c1", "ok", nil)...)...)
		before := s.Folded()
		s.Catch(facts)
		if n := s.Folded() - before; n != 3 {
			t.Fatalf("turn %d folded %d facts, want its 3", turn, n)
		}
	}
}

// The progress a standing hands out is a copy: folding on does not write
// into the maps a caller still reads.
func TestProgressHandedOutIsNotWrittenByTheFoldOn(t *testing.T) {
	facts := factsOf(t, turnBodies(1, "t", "c1", "ok", nil)...)
	s := NewStanding()
	s.Catch(facts[:2])
	p := s.Progress()
	s.Catch(facts)
	if len(p.Completed) != 0 {
		t.Fatalf("a progress read before the dispatch was settled holds %d settlements", len(p.Completed))
	}
	if got := s.Progress(); len(got.Completed) != 1 {
		t.Fatalf("the standing holds %d settlements, want 1", len(got.Completed))
	}
}

// BenchmarkReadingEveryTurn reads where a run stands at each turn of a
// run of 10, 100 and 1,000 turns, and reports the cost of a turn's read
// (ns/turn): flat in the run's length for the standing, which folds the
// turn's facts, and growing with it for the batch readings of the whole
// log, which the runner's every step made before issue 38.
func BenchmarkReadingEveryTurn(b *testing.B) {
	for _, turns := range []int{10, 100, 1000} {
		var facts []events.Fact
		for turn := uint32(1); turn <= uint32(turns); turn++ {
			facts = append(facts, factsOf(b, turnBodies(turn, "t", "c1", "ok", nil)...)...)
		}
		perTurn := len(facts) / turns
		b.Run(fmt.Sprintf("standing/turns=%d", turns), func(b *testing.B) {
			for b.Loop() {
				s := NewStanding()
				for end := perTurn; end <= len(facts); end += perTurn {
					s.Catch(facts[:end])
					_, _ = s.Progress(), s.Spend()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*turns), "ns/turn")
		})
		if turns > 100 {
			continue // quadratic: 100 turns show the growth
		}
		b.Run(fmt.Sprintf("wholelog/turns=%d", turns), func(b *testing.B) {
			for b.Loop() {
				for end := perTurn; end <= len(facts); end += perTurn {
					_, _, _ = ReadProgress(facts[:end]), Tally(facts[:end]), UnknownOperations(facts[:end])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*turns), "ns/turn")
		})
	}
}
