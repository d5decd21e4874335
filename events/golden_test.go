package events_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/factline/factline/events"
)

// Golden files pin the wire format: testdata/golden/<name>.msgpack holds the
// envelope version 1 encoding of the fixed fact goldenFacts returns under
// <name> (written by the writers before version 2),
// testdata/golden/v2/<name>.msgpack its version 2 encoding (the writers
// before version 3), and testdata/golden/v3/<name>.msgpack its version 3
// encoding, which Encode writes today, and testdata/golden/v4/<name>.msgpack
// its version 4 encoding, which EncodeStored writes for the log. TestGoldenDecodes checks that today's
// reader still decodes every version 1 file to its fact; TestGoldenV2 that
// every version 2 file does, and that the version 2 writer still writes its
// bytes; TestGoldenV3 that every fixture has a version 3 file, that the file
// decodes to it, and that Encode still writes exactly those bytes;
// TestGoldenV4 the same of version 4, read with its fixture's subject.
//
// Golden files are never regenerated once committed. A reader must keep
// decoding what older writers wrote, so a new schema version adds new files
// (e.g. run_ended_v2.msgpack) next to the old ones; it does not replace them.
// -update therefore only writes version 3 and 4 files that do not exist yet, and
// fails if a committed one no longer matches its fixture's encoding; the
// version 1 and 2 sets are closed (no writer makes them any more).
var update = flag.Bool("update", false, "write missing golden files and their fuzz seeds")

const (
	goldenDir   = "testdata/golden"
	goldenV2Dir = "testdata/golden/v2"
	goldenV3Dir = "testdata/golden/v3"
	goldenV4Dir = "testdata/golden/v4"
	fuzzSeedDir = "testdata/fuzz/FuzzDecode"
	// fuzzStoredSeedDir holds FuzzDecodeStored's corpus: a subject and a
	// message each.
	fuzzStoredSeedDir = "testdata/fuzz/FuzzDecodeStored"
	goldenSuite       = "nightly-2025-06"
	goldenRun         = "r-7f3a"
)

// goldenID returns a fixed ULID numbered n.
func goldenID(n int) ulid.ULID { return ulid.MustParse(fmt.Sprintf("01JABCDEFGHJKMNPQRST%06d", n)) }

// goldenTime returns a fixed instant n seconds into the reference run.
func goldenTime(n int) time.Time {
	return time.Date(2025, 6, 1, 12, 0, n, 250_000_000, time.UTC)
}

// digest returns a fixed, readable digest.
func digest(s string) events.Digest { return events.DigestOf([]byte(s)) }

func ptr[T any](v T) *T { return &v }

// validMeta returns a valid envelope for kind k at position n.
func validMeta(k events.Kind, n int) events.Meta {
	m := events.Meta{
		Suite:          goldenSuite,
		Run:            goldenRun,
		TaskGeneration: 1,
		Position:       uint64(n),
		Producer:       events.Producer{Service: k.Owner(), Instance: string(k.Owner()) + "-0"},
		At:             goldenTime(n),
	}
	if k.SuiteScoped() {
		m.Run, m.TaskGeneration = events.SuiteScope, 0
	}
	if n > 1 {
		m.Causation = goldenID(n - 1).String()
	}
	return m
}

// fixture builds the fixed fact numbered n through NewFact.
func fixture(t testing.TB, n int, b events.Body) events.Fact {
	t.Helper()
	f, err := events.NewFact(validMeta(b.Kind(), n), b)
	if err != nil {
		t.Fatalf("fixture %d (%s): %v", n, b.Kind(), err)
	}
	f.ID = goldenID(n)
	return f
}

type goldenCase struct {
	name string // file name without .msgpack
	fact events.Fact
}

// goldenFacts returns the fixed facts behind the golden files. Across the
// set, every kind and every union variant appears at least once.
func goldenFacts(t testing.TB) []goldenCase {
	t.Helper()
	edit := events.CompletedDispatch{
		CallID:       "call-1",
		EvidenceRef:  events.EvidenceRef(goldenID(7).String() + "/call-1"),
		Disposition:  events.DispositionExecuted,
		Mutation:     events.MutationApplied,
		Verification: events.NotVerifier(),
	}
	test := events.CompletedDispatch{
		CallID:       "call-2",
		EvidenceRef:  events.EvidenceRef(goldenID(8).String() + "/call-2"),
		Disposition:  events.DispositionExecuted,
		Mutation:     events.MutationNotApplicable,
		Verification: events.Passed(3),
	}
	pendingCheck, unknownCheck := test, test
	pendingCheck.Disposition, pendingCheck.Verification = events.DispositionDeferred, events.VerificationPending()
	unknownCheck.Verification = events.VerificationUnknown("verifier timed out")
	evidence := func(intent events.ActorIntent, ds ...events.CompletedDispatch) events.RunEvidence {
		return events.RunEvidence{
			RunID: goldenRun, TaskGeneration: 1, Turn: 2, EvidencePosition: 9,
			ActorIntent: intent, Dispatches: ds,
		}
	}
	observed := func(action *events.StallAction) events.StallObserved {
		return events.StallObserved{Turn: 2, Observation: events.StallObservation{
			Position:   10,
			Checkpoint: events.StallCheckpoint{Episode: 1, RepairsUsed: 2, WriteCredit: 1, OpenFailure: true, Signature: "sig-9c1e"},
			Action:     action,
		}}
	}
	verdict := func(result events.VerdictResult, vetoes ...events.GradeVeto) events.GradeVerdict {
		return events.GradeVerdict{Verdict: events.GraderVerdict{
			AttemptID:  goldenRun,
			SnapshotID: digest("snapshot"),
			Revision:   1,
			Instruments: []events.InstrumentResult{{
				Instrument: "unit-tests", Version: "1.4.0", Required: true, Outcome: events.InstrumentPassed,
			}},
			Vetoes: vetoes,
			Result: result,
		}}
	}
	proposeDone := evidence(events.ProposeDone(events.EvidenceRef(goldenID(8).String()+"/call-2")), pendingCheck, unknownCheck)
	proposeDone.AcceptedControl = &events.ControlRef{ID: "ctl-1", Signal: events.SignalSteer}

	cases := []struct {
		name string
		body events.Body
	}{
		{"suite_submitted", events.SuiteSubmitted{
			Name:       "nightly",
			SpecDigest: digest("spec"),
			Cases:      []events.Ref{{ID: "fix-login", Digest: digest("case:fix-login")}},
			Treatments: []events.Ref{{ID: "baseline", Digest: digest("treatment:baseline")}, {ID: "planner", Digest: digest("treatment:planner")}},
			Trials:     3,
			Required:   []events.InstrumentID{"unit-tests"},
		}},
		{"run_requested", events.RunRequested{
			Case: "fix-login", CaseDigest: digest("case:fix-login"),
			Treatment: "baseline", TreatmentDigest: digest("treatment:baseline"),
			Trial:  1,
			Budget: events.Budget{Steps: 40, Tokens: 200_000, Seconds: 900, Cost: 5_000},
		}},
		{"run_claimed", events.RunClaimed{Runner: "runner-a", Lease: 2, ResumeFrom: 4}},
		{"turn_started", events.TurnStarted{Turn: 1, ContextDigest: digest("context:1"), Messages: 3, Policy: "keep-all"}},
		{"model_replied", events.ModelReplied{
			Turn: 1, Provider: "anthropic", Model: "claude-x", Text: "I will run the tests.",
			Calls: []events.ToolCall{
				{ID: "call-1", Name: "edit_file", Args: `{"path":"login.go"}`, ArgsDigest: digest(`{"path":"login.go"}`)},
				{ID: "call-2", Name: "run_tests", ArgsDigest: digest("{}")},
			},
			Usage:       &events.Usage{InputTokens: 1200, OutputTokens: 80, Cost: ptr(uint64(31))},
			Finish:      "tool_use",
			ReplyDigest: digest("reply:1"),
		}},
		{"model_replied_no_usage", events.ModelReplied{Turn: 2, Provider: "local", TextDigest: digest("long text")}},
		{"dispatch_intended", events.DispatchIntended{
			Turn: 1, CallID: "call-1", Tool: "edit_file", OperationID: "op-1",
			ArgsDigest: digest(`{"path":"login.go"}`), Effect: events.EffectWrite,
		}},
		{"dispatch_completed", events.DispatchCompleted{
			Turn: 1,
			Dispatch: events.CompletedDispatch{
				CallID: "call-2", EvidenceRef: events.EvidenceRef(goldenID(8).String() + "/call-2"),
				Disposition: events.DispositionExecuted, Mutation: events.MutationUnchanged,
				Verification: events.Failed(3, true,
					events.Diagnostic{Message: "undefined: token", File: "login.go", Line: 42, Code: "compile"},
					events.Diagnostic{Message: "1 test failed"}),
			},
			Output:       "FAIL login_test.go:10",
			OutputDigest: digest("FAIL login_test.go:10"),
		}},
		{"dispatch_completed_error", events.DispatchCompleted{
			Turn: 1,
			Dispatch: events.CompletedDispatch{
				CallID: "call-3", EvidenceRef: "call-3",
				Disposition: events.DispositionRejected, Mutation: events.MutationNotApplied,
				Verification: events.NotRun(),
			},
			Error: &events.ToolError{Code: "denied", Message: "operator rejected the call"},
		}},
		{"turn_completed_continue", events.TurnCompleted{Evidence: evidence(events.Continue(), edit, test)}},
		{"turn_completed_propose_done", events.TurnCompleted{Evidence: proposeDone}},
		{"turn_completed_report_blocked", events.TurnCompleted{Evidence: evidence(events.ReportBlocked("no network", "req-deploy"))}},
		{"stall_observed", observed(nil)},
		{"stall_observed_retry", observed(ptr(events.Retry(events.StallRetry{Cause: "same failure twice", Feedback: "read the error", Remaining: 1})))},
		{"stall_observed_escalate", observed(ptr(events.Escalate(events.StallEscalate{Cause: "no progress", Target: "reviewer", Evidence: []events.EvidenceRef{"e-1"}})))},
		{"stall_observed_stop", observed(ptr(events.StopStall(events.StallStop{Cause: "repairs exhausted", Unmet: []events.RequirementID{"req-tests"}, Evidence: []events.EvidenceRef{"e-1", "e-2"}})))},
		{"stop_decided_continue", events.StopDecided{Decision: events.StopDecision{
			DecisionID: "dec-1", Turn: 1, TaskGeneration: 1,
			Result: events.ContinueWith("tests still fail", "req-tests"),
		}}},
		{"stop_decided_finish", events.StopDecided{Decision: events.StopDecision{
			DecisionID: "dec-2", Turn: 2, TaskGeneration: 1,
			Result: events.Finish(events.StopFinish{
				Status: events.FinishDone, Supported: []events.RequirementID{"req-tests"},
				Evidence: []events.EvidenceRef{events.EvidenceRef(goldenID(8).String() + "/call-2")},
				Reason:   "tests pass at the current epoch",
			}),
		}}},
		{"control_accepted_steer", events.ControlAccepted{
			Control: events.ControlRef{ID: "ctl-1", Signal: events.SignalSteer}, Instruction: "also update the changelog",
		}},
		{"control_accepted_approve", events.ControlAccepted{
			Control: events.ControlRef{ID: "ctl-2", Signal: events.SignalApprove},
			CallID:  "call-4", ArgsDigest: digest(`{"cmd":"deploy"}`), Reason: "looks safe",
		}},
		{"control_accepted_cancel", events.ControlAccepted{Control: events.ControlRef{ID: "ctl-3", Signal: events.SignalCancel}}},
		{"task_generation", events.TaskGenerationStarted{Generation: 2, Instruction: "also update the changelog", Control: "ctl-1"}},
		{"run_ended", events.RunEnded{
			Status: events.RunDone, Reason: "stop decider finished: done",
			Spent:        events.Spent{Steps: 2, Tokens: ptr(uint64(2600)), Millis: 48_000},
			Steps:        2,
			LastEvidence: []events.EvidenceRef{events.EvidenceRef(goldenID(8).String() + "/call-2")},
			NextAction:   "grade",
		}},
		{"candidate_sealed", events.CandidateSealed{SnapshotDigest: digest("snapshot"), FixtureDigest: digest("fixture"), Files: 12}},
		{"grade_instrument", events.GradeInstrument{SnapshotDigest: digest("snapshot"), Result: events.InstrumentResult{
			Instrument: "unit-tests", Version: "1.4.0", Required: true, Outcome: events.InstrumentFailed,
			Detail: "1 of 20 failed", Evidence: []events.EvidenceRef{"report-1"},
		}}},
		{"grade_verdict_passed", verdict(events.VerdictOK(), events.GradeVeto{
			Instrument: "lint", Requirement: "req-style", Reason: "long line",
		})},
		{"grade_verdict_failed", verdict(events.VerdictFail(), events.GradeVeto{
			Instrument: "review", Requirement: "req-tests", Reason: "test deleted", Evidence: []events.EvidenceRef{"e-3"}, Binding: true,
		})},
		{"grade_verdict_pending", verdict(events.VerdictWaiting("judge"))},
		{"grade_verdict_invalid", verdict(events.VerdictNoAnswer("no candidate sealed"))},
		{"grade_verdict_abstained", verdict(events.VerdictAbstain("case under review"))},
		{"grade_conflict", events.GradeConflict{
			SnapshotDigest: digest("snapshot"), Revision: 2, ConflictsWith: 1, Instrument: "judge", Reason: "judge disagrees with tests",
		}},
		{"suite_reported", events.SuiteReported{
			ReportDigest: digest("report"), Attempts: 6, Passed: 2, Failed: 1, Pending: 1, Invalid: 1, Excluded: 1,
		}},
		// Added with the optional checkpoint fields armed, feedback_delivered
		// and opportunity; appended last so earlier fixtures keep their IDs.
		{"stall_observed_armed", events.StallObserved{Turn: 3, Observation: events.StallObservation{
			Position: 14,
			Checkpoint: events.StallCheckpoint{
				Episode: 1, RepairsUsed: 2, WriteCredit: 1, OpenFailure: true, Signature: "sig-9c1e",
				Armed: []string{"repeated_failure", "failing_verifications"}, FeedbackDelivered: 1, Opportunity: 2,
			},
			Action: ptr(events.StopStall(events.StallStop{Cause: "repeated_failure", Unmet: []events.RequirementID{"req-tests"}, Evidence: []events.EvidenceRef{"t3/call-2"}})),
		}}},
		// Added with the optional suite fields split and valid_outcomes, and
		// the optional agent identity of run.requested.
		{"suite_submitted_split", events.SuiteSubmitted{
			Name:          "nightly",
			SpecDigest:    digest("spec:split"),
			Cases:         []events.Ref{{ID: "fix-login", Digest: digest("case:fix-login")}},
			Treatments:    []events.Ref{{ID: "baseline", Digest: digest("treatment:baseline")}},
			Trials:        3,
			Required:      []events.InstrumentID{"unit-tests"},
			Split:         "holdout",
			ValidOutcomes: []events.RunStatus{events.RunDone, events.RunBlocked, events.RunIncomplete},
		}},
		{"run_requested_identity", events.RunRequested{
			Case: "fix-login", CaseDigest: digest("case:fix-login"),
			Treatment: "baseline", TreatmentDigest: digest("treatment:baseline"),
			Trial:    2,
			Budget:   events.Budget{Steps: 40},
			Identity: digest("identity"),
			Components: []events.Component{
				{Name: "harness", Value: "0.1.0"},
				{Name: "model", Value: `{"provider":"openai","name":"qwen2.5-coder:7b"}`},
				{Name: "stall", Value: "sha256:" + digest("stall").Hex()},
			},
		}},
		// control.accepted version 2: the resolve signal.
		{"control_accepted_resolve_v2", events.ControlAccepted{
			Control: events.ControlRef{ID: "ctl-4", Signal: events.SignalResolve}, Operation: "r-7f3a/t3/pay",
			Outcome: events.OutcomeApplied, Reason: "the sink shows the payment",
		}},
		// Added with the optional containment record of run.claimed.
		{"run_claimed_containment", events.RunClaimed{Runner: "runner-b", Lease: 1, Containment: &events.Containment{
			Provider: "process",
			Features: []events.ContainmentFeature{
				{Name: "address_space_bytes", State: events.ContainmentActive, Limit: 8 << 30},
				{Name: "cpu_seconds", State: events.ContainmentActive, Limit: 600},
				{Name: "network_isolation", State: events.ContainmentUnsupported, Detail: "unshare(CLONE_NEWNET): operation not permitted"},
				{Name: "open_files", State: events.ContainmentActive, Limit: 1024},
				{Name: "processes", State: events.ContainmentActive, Limit: 512},
				{Name: "session", State: events.ContainmentActive},
				{Name: "unprivileged_user", State: events.ContainmentOff},
			},
		}}},
		// Added with the optional wait for a fleet-wide model slot.
		{"model_replied_queued", events.ModelReplied{Turn: 3, Provider: "openai", Model: "m", Text: "ok", Finish: "stop", QueueWaitMs: 4200}},
	}
	out := make([]goldenCase, len(cases))
	for i, c := range cases {
		f := fixture(t, i+1, c.body)
		// Every file but those named _v2 was written when its kind was at
		// schema version 1; they must keep decoding as such.
		if !strings.HasSuffix(c.name, "_v2") {
			f.Schema = 1
		}
		out[i] = goldenCase{name: c.name, fact: f}
	}
	// Fixtures numbered apart from the list above (from 1001), so that
	// fixtures appended to that list concurrently never shift their IDs.
	for _, c := range []struct {
		n    int
		name string
		body events.Body
	}{
		// run.claimed with the optional extensions and identity fields.
		{1001, "run_claimed_extensions", events.RunClaimed{Runner: "runner-b", Lease: 1,
			Identity: digest("identity:claimed"),
			Extensions: []events.Extension{{
				Name: "notes", Command: "/opt/mcp/notes-server", Args: []string{"--root", "."},
				Executable: digest("notes-server binary"), Server: "notes-server", Version: "1.2.3", Protocol: "2025-06-18",
				Tools: []events.ExtensionTool{
					{Name: "search", Effect: events.EffectRead, Approval: events.ApprovalNever},
					{Name: "publish", Effect: events.EffectExternal, Approval: events.ApprovalAlways},
				},
				Withheld: []string{"delete_all"},
			}},
		}},
		// grade.instrument with the optional containment of the grader's
		// command.
		{1002, "grade_instrument_containment", events.GradeInstrument{SnapshotDigest: digest("snapshot"),
			Result: events.InstrumentResult{
				Instrument: "unit-tests", Version: "1.4.0", Required: true, Outcome: events.InstrumentFailed,
				Detail: "timed out after 30s; the command and its children were killed",
			},
			Containment: &events.Containment{Provider: "process", Features: []events.ContainmentFeature{
				{Name: "address_space_bytes", State: events.ContainmentActive, Limit: 8 << 30},
				{Name: "cpu_seconds", State: events.ContainmentActive, Limit: 600},
				{Name: "network_isolation", State: events.ContainmentActive, Detail: "own network namespace, loopback down"},
				{Name: "open_files", State: events.ContainmentActive, Limit: 1024},
				{Name: "processes", State: events.ContainmentActive, Limit: 512},
				{Name: "scrubbed_environment", State: events.ContainmentActive},
				{Name: "session", State: events.ContainmentActive},
				{Name: "unprivileged_user", State: events.ContainmentActive, Detail: "a fresh uid per attempt; every process of it is killed after each command"},
			}},
		}},
		// dispatch.completed with the optional outcome of an external
		// effect (here one whose answer was lost), and the not_run
		// disposition of a call a cancel cut off.
		{1101, "dispatch_completed_outcome_unknown", events.DispatchCompleted{Turn: 2,
			Dispatch: events.CompletedDispatch{
				CallID: "pay", EvidenceRef: "t2/pay", Tool: "http_call",
				Disposition: events.DispositionExecuted, Mutation: events.MutationNotApplicable,
				Verification: events.NotVerifier(), Outcome: events.OutcomeUnknown,
			},
			Output: `{"ok":false,"error":{"code":"OUTCOME_UNKNOWN","message":"no answer within 30s","retryable":false}}`,
			Error:  &events.ToolError{Code: "OUTCOME_UNKNOWN", Message: "no answer within 30s"},
		}},
		{1102, "dispatch_completed_not_run", events.DispatchCompleted{Turn: 2,
			Dispatch: events.CompletedDispatch{
				CallID: "after", EvidenceRef: "t2/after", Tool: "write_file",
				Disposition: events.DispositionNotRun, Mutation: events.MutationNotApplied,
				Verification: events.NotVerifier(),
			},
			Error: &events.ToolError{Code: "NOT_RUN", Message: "the run was cancelled before this call"},
		}},
		// run.ended with the exhausted status a spent budget now ends
		// with (its wire shape unchanged from run_ended).
		{1201, "run_ended_exhausted", events.RunEnded{
			Status: events.RunExhausted, Reason: "budget_preflight",
			Spent:        events.Spent{Steps: 5, Tokens: ptr(uint64(5500)), Cost: ptr(uint64(10)), Millis: 61_000},
			Steps:        5,
			LastEvidence: []events.EvidenceRef{"t5/call-1"},
			NextAction:   "the budget named in the reason ran out: raise it or authorize a new bounded run, if it is still the right work",
		}},
		// The optional judge call of grade.instrument and stop.decided,
		// and the optional cached and reasoning tokens of usage.
		{1301, "grade_instrument_judge", events.GradeInstrument{SnapshotDigest: digest("snapshot"),
			Result: events.InstrumentResult{Instrument: "review", Version: "1", Outcome: events.InstrumentPassed, Detail: "openai/judge-1: VERDICT: PASS"},
			Judge: &events.JudgeCall{Model: "openai/judge-1", Millis: 2_300, Usage: &events.Usage{
				InputTokens: 3000, OutputTokens: 400, Cost: ptr(uint64(9)), CachedInputTokens: ptr(uint64(1024)), ReasoningTokens: ptr(uint64(320)),
			}},
		}},
		{1302, "stop_decided_judge", events.StopDecided{
			Decision: events.StopDecision{
				DecisionID: "dec-3", Turn: 3, TaskGeneration: 1,
				Result: events.Finish(events.StopFinish{Status: events.FinishDone, Reason: "tests pass at the current epoch"}),
			},
			Judge: &events.JudgeCall{Model: "openai/reviewer", Millis: 800},
		}},
		// run.requested of a retry: a new run of the same planned attempt.
		{1501, "run_requested_retry", events.RunRequested{
			Case: "fix-sum", CaseDigest: digest("case"), Treatment: "baseline", TreatmentDigest: digest("treatment"), Trial: 1,
			RetryOf: "fix-sum-baseline-t1",
		}},
		// suite.stopped: a suite stopped early on its comparison.
		{1401, "suite_stopped", events.SuiteStopped{
			Comparison: "stall-off vs stall-on", Reason: events.StopDifference, Pairs: 24, Confidence: 950, Low: 112, High: 688,
		}},
		// run.claimed and grade.instrument of commands run in a container
		// environment: the optional image of the containment, by digest.
		{1801, "run_claimed_container", events.RunClaimed{Runner: "runner-c", Lease: 2, Containment: goldenContainer()}},
		{1802, "grade_instrument_container", events.GradeInstrument{SnapshotDigest: digest("snapshot"),
			Result: events.InstrumentResult{
				Instrument: "unit-tests", Version: "1.4.0", Required: true, Outcome: events.InstrumentPassed, Detail: "exit 0",
			},
			Containment: goldenContainer(),
		}},
		// model.replied served from the response cache (issue 21): the
		// original's tokens, a billed cost of zero, where it came from.
		{2131, "model_replied_cached", events.ModelReplied{
			Turn: 1, Provider: "openai", Model: "gpt-x", Text: "The tests pass.",
			Usage:  &events.Usage{InputTokens: 900, OutputTokens: 40, Cost: ptr(uint64(0))},
			Finish: "stop",
			Cached: &events.CachedReply{Entry: digest("cache-entry:1"), Suite: "nightly-2025-05", Run: "r-1c2d", Turn: 1, Cost: ptr(uint64(23))},
		}},
		// Scores (issue 34): a command's JUnit report and a judge's rating
		// on grade.instrument, the scorers' scores on grade.verdict, and
		// the scorer a suite stopped early on.
		{3401, "grade_instrument_score_junit", events.GradeInstrument{SnapshotDigest: digest("snapshot"),
			Result: events.InstrumentResult{
				Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentFailed, Detail: "exit 1",
				Score: &events.InstrumentScore{Source: events.ScoreJUnit,
					Values: []events.ScoreValue{{Name: "score", Value: 0.625}},
					Tests: &events.TestTally{Passed: 5, Failed: 3, Skipped: 1, Cases: []events.TestCase{
						{Suite: "example.com/sum", Name: "TestNegative", Outcome: events.TestFailed, Message: "Failed"},
						{Suite: "example.com/sum", Name: "TestTable/mixed", Outcome: events.TestFailed, Message: "Failed"},
						{Suite: "example.com/sum", Name: "TestTable", Outcome: events.TestFailed, Message: "Failed"},
						{Suite: "example.com/sum", Name: "TestLarge", Outcome: events.TestSkipped},
						{Suite: "example.com/sum", Name: "TestEmpty", Outcome: events.TestPassed},
					}, Unlisted: 4},
				},
			},
		}},
		{3402, "grade_instrument_score_judge", events.GradeInstrument{SnapshotDigest: digest("snapshot"),
			Result: events.InstrumentResult{
				Instrument: "review", Version: "1", Outcome: events.InstrumentPassed, Detail: "scripted/judge-1: SCORE: 4 VERDICT: PASS",
				Score: &events.InstrumentScore{Source: events.ScoreJudge, Values: []events.ScoreValue{{Name: "score", Value: 4}},
					Reasons: "The fix is correct; NOTES.md explains it but skips the edge case."},
			},
			Judge: &events.JudgeCall{Model: "scripted/judge-1", Millis: 3},
		}},
		{3403, "grade_verdict_scores", events.GradeVerdict{Verdict: events.GraderVerdict{
			AttemptID: "attempt-1", SnapshotID: digest("snapshot"), Revision: 2,
			Instruments: []events.InstrumentResult{
				{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentFailed, Detail: "exit 1",
					Score: &events.InstrumentScore{Source: events.ScoreJSONLine, Values: []events.ScoreValue{{Name: "bleu", Value: 0.31}, {Name: "score", Value: 0.94}}}},
				{Instrument: "review", Version: "1", Outcome: events.InstrumentAbstained, Detail: "no SCORE line",
					Score: &events.InstrumentScore{Source: events.ScoreJudge, Missing: "the judge gave no SCORE line"}},
			},
			Result: events.VerdictOK(),
			Scores: []events.Score{
				{Scorer: "correctness", Instrument: "tests", Key: "score", Min: 0, Max: 1, PassAt: ptr(0.9), Raw: ptr(0.94), Value: ptr(0.94)},
				{Scorer: "quality", Instrument: "review", Key: "score", Min: 1, Max: 5, Missing: "review abstained"},
				{Scorer: "errors", Instrument: "tests", Key: "bleu", Min: 0, Max: 1, LowerIsBetter: true, Raw: ptr(0.31), Value: ptr(0.31)},
			},
		}}},
		{3404, "suite_stopped_scorer", events.SuiteStopped{
			Comparison: "stall-off vs stall-on", Reason: events.StopDifference, Pairs: 30, Confidence: 950, Low: 21, High: 402, Scorer: "quality",
		}},
		// context.summarised (issue 35): a condenser's summary, a recorded
		// model call, and one whose provider reported no usage.
		{3501, "context_summarised", events.ContextSummarised{
			Turn: 5, From: 2, Through: 3, Summary: "answer.txt held 5; check.sh wants 4 (evidence t2/c)",
			RequestDigest: digest("summary request:5"), Provider: "openai", Model: "small-summariser",
			Usage: &events.Usage{InputTokens: 900, OutputTokens: 40, Cost: ptr(uint64(3))}, Reserve: 4, Tokens: 1800,
		}},
		// suite.controlled (issue 36): an operator's cancel of a whole
		// suite, and a pause with no reason given.
		{3601, "suite_controlled_cancel", events.SuiteControlled{
			ID: "01JABCDEFGHJKMNPQRST003601", Action: events.SuiteCancel, From: "ops@build-7", Reason: "wrong model in the roster",
		}},
		{3602, "suite_controlled_pause", events.SuiteControlled{ID: "c-2", Action: events.SuitePause, From: "ci"}},
		{3502, "context_summarised_no_usage", events.ContextSummarised{
			Turn: 3, From: 1, Through: 1, Summary: "nothing yet", RequestDigest: digest("summary request:3"), Provider: "scripted",
		}},
		// Delegation (issue 35): a child run's request naming its parent,
		// the parent's intent reserving the child's budget, and its
		// settlement with the child's outcome.
		{3601, "run_delegated", events.RunDelegated{
			Request: events.RunRequested{Case: "fix-sum", CaseDigest: digest("child case"), Treatment: "stall-on",
				TreatmentDigest: digest("treatment stall-on"), Trial: 2, Budget: events.Budget{Steps: 5, Cost: 40},
				Components: []events.Component{{Name: "delegation", Value: "allowed"}, {Name: "harness", Value: "0.1.0"}}},
			Parent: events.ParentRef{Run: "r-7f3a", Turn: 2, CallID: "c-1", OperationID: "r-7f3a/t2/c-1"},
		}},
		{3602, "dispatch_intended_delegation", events.DispatchIntended{
			Turn: 2, CallID: "c-1", Tool: "delegate", OperationID: "r-7f3a/t2/c-1", ArgsDigest: digest(`{"instruction":"find it"}`),
			Effect: events.EffectExternal, Delegation: &events.Delegation{Run: "r-7f3a-d2-c-1", Steps: 5, Cost: 40, WallMillis: 60000},
		}},
		{3603, "dispatch_completed_child", events.DispatchCompleted{
			Turn: 2, Dispatch: events.CompletedDispatch{CallID: "c-1", EvidenceRef: "t2/c-1", Disposition: events.DispositionExecuted,
				Mutation: events.MutationNotApplicable, Verification: events.NotVerifier(), Tool: "delegate"},
			Output: "child run r-7f3a-d2-c-1 ended done: sum is in lib/sum.go",
			Child: &events.ChildOutcome{Run: "r-7f3a-d2-c-1", Status: events.RunDone, Reason: "done", Answer: "sum is in lib/sum.go",
				Steps: 2, Usage: &events.Usage{InputTokens: 300, OutputTokens: 20, Cost: ptr(uint64(6))}, Charged: 6},
		}},
	} {
		f := fixture(t, c.n, c.body)
		f.Schema = 1
		out = append(out, goldenCase{name: c.name, fact: f})
	}
	return out
}

// goldenFact returns the fixture named name.
func goldenFact(t testing.TB, name string) events.Fact {
	t.Helper()
	for _, c := range goldenFacts(t) {
		if c.name == name {
			return c.fact
		}
	}
	t.Fatalf("no golden fixture %q", name)
	return events.Fact{}
}

// goldenFiles returns the checked-in version 1 golden files, by name
// without extension.
func goldenFiles(t testing.TB) map[string][]byte { t.Helper(); return goldenFilesIn(t, goldenDir) }

// goldenV2Files returns the checked-in version 2 golden files.
func goldenV2Files(t testing.TB) map[string][]byte { t.Helper(); return goldenFilesIn(t, goldenV2Dir) }

// goldenV3Files returns the checked-in version 3 golden files.
func goldenV3Files(t testing.TB) map[string][]byte { t.Helper(); return goldenFilesIn(t, goldenV3Dir) }

// goldenV4Files returns the checked-in version 4 golden files.
func goldenV4Files(t testing.TB) map[string][]byte { t.Helper(); return goldenFilesIn(t, goldenV4Dir) }

func goldenFilesIn(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.msgpack"))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]byte, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(p), ".msgpack")] = b
	}
	return out
}

// writeGolden writes the version 3 golden file of c, and its fuzz seeds, if
// the golden file does not exist yet. It never rewrites a committed golden
// file.
func writeGolden(t *testing.T, c goldenCase) {
	t.Helper()
	b, err := events.Encode(c.fact)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	if !writeNewGolden(t, goldenV3Dir, c.name, b) {
		return
	}
	for suffix, seed := range fuzzSeeds(b) {
		writeFuzzSeed(t, "golden_v3_"+c.name+suffix, seed)
	}
}

// writeGoldenV4 writes the version 4 golden file of c, and its seeds for
// FuzzDecodeStored (with the fixture's subject), if the file does not
// exist yet. It never rewrites a committed golden file.
func writeGoldenV4(t *testing.T, c goldenCase) {
	t.Helper()
	b, err := events.EncodeStored(c.fact)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	if !writeNewGolden(t, goldenV4Dir, c.name, b) {
		return
	}
	subject := goldenSubject(t, c.fact)
	for suffix, seed := range fuzzSeeds(b) {
		writeStoredFuzzSeed(t, "golden_v4_"+c.name+suffix, subject, seed)
	}
}

// writeNewGolden writes b as dir/name.msgpack and reports whether it did:
// a file that exists is committed, and is never rewritten; one that no
// longer matches b is an error, because old bytes must keep decoding.
func writeNewGolden(t *testing.T, dir, name string, b []byte) bool {
	t.Helper()
	path := filepath.Join(dir, name+".msgpack")
	old, err := os.ReadFile(path)
	switch {
	case err == nil:
		if !bytes.Equal(old, b) {
			t.Errorf("%s: committed golden file differs from the fixture's encoding; golden files are never regenerated, add a new one instead", path)
		}
		return false
	case !os.IsNotExist(err):
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
	return true
}

// goldenSubject is the subject a fixture is stored on.
func goldenSubject(t testing.TB, f events.Fact) string {
	t.Helper()
	s, err := f.Subject()
	if err != nil {
		t.Fatalf("fixture %s has no subject: %v", f.Kind(), err)
	}
	return s
}

// writeStoredFuzzSeed writes one FuzzDecodeStored seed (a subject and a
// message) in the go fuzz corpus file format.
func writeStoredFuzzSeed(t *testing.T, name, subject string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(fuzzStoredSeedDir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("go test fuzz v1\nstring(%q)\n[]byte(%q)\n", subject, data)
	if err := os.WriteFile(filepath.Join(fuzzStoredSeedDir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fuzzSeeds derives corpus entries from an encoded fact: the fact itself, a
// truncated copy and a copy with one byte flipped.
func fuzzSeeds(b []byte) map[string][]byte {
	flipped := slices.Clone(b)
	flipped[len(flipped)/2] ^= 0xff
	return map[string][]byte{
		"":           b,
		"_truncated": b[:len(b)/2],
		"_flipped":   flipped,
	}
}

// writeFuzzSeed writes one seed in the go fuzz corpus file format.
func writeFuzzSeed(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(fuzzSeedDir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
	if err := os.WriteFile(filepath.Join(fuzzSeedDir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenDecodes reads the version 1 files: old stores and export files
// hold facts written that way, and every one must still decode to its
// fixture.
func TestGoldenDecodes(t *testing.T) {
	cases := map[string]events.Fact{}
	for _, c := range goldenFacts(t) {
		cases[c.name] = c.fact
	}
	files := goldenFiles(t)
	if len(files) == 0 {
		t.Fatalf("no version 1 golden files in %s", goldenDir)
	}
	for name, b := range files {
		want, ok := cases[name]
		if !ok {
			t.Errorf("golden file %s.msgpack has no fixture in goldenFacts; the fixture of a committed file must stay", name)
			continue
		}
		if b[0]&0xf0 != 0x80 {
			t.Errorf("%s: a version 1 file holds a msgpack map, this one starts %#x", name, b[0])
		}
		got, err := events.Decode(b)
		if err != nil {
			t.Errorf("%s: committed golden file no longer decodes: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded\n  %#v\nwant\n  %#v", name, got, want)
		}
	}
}

// TestGoldenV2 reads the version 2 files: stores and export files written
// before version 3 hold facts written that way. Each fixture has one, it
// decodes to the fixture, and the version 2 writer (kept for this check)
// still writes its bytes.
func TestGoldenV2(t *testing.T) {
	files := goldenV2Files(t)
	for _, c := range goldenFacts(t) {
		b, ok := files[c.name]
		if !ok {
			t.Errorf("%s: no golden file %s/%s.msgpack", c.name, goldenV2Dir, c.name)
			continue
		}
		delete(files, c.name)
		if !bytes.HasPrefix(b, []byte{0x9d, 0x02}) {
			t.Errorf("%s: a version 2 file opens with a 13-element array and the version 2, this one %x", c.name, b[:min(len(b), 2)])
		}
		if _, ok := decodesTo(t, c.name, b, c.fact); !ok {
			continue
		}
		enc, err := events.EncodeV2(c.fact)
		if err != nil || !bytes.Equal(enc, b) {
			t.Errorf("%s: the version 2 writer no longer writes the committed bytes (%v):\n got %x\nwant %x", c.name, err, enc, b)
		}
	}
	for name := range files {
		t.Errorf("golden file v2/%s.msgpack has no fixture in goldenFacts; the fixture of a committed file must stay", name)
	}
}

// TestGoldenV3 reads the version 3 files: each fixture has one, it decodes
// to the fixture, and Encode writes exactly its bytes. Together they cover
// every kind and every union variant.
func TestGoldenV3(t *testing.T) {
	cases := goldenFacts(t)
	if *update {
		for _, c := range cases {
			writeGolden(t, c)
		}
	}
	files := goldenV3Files(t)

	kinds := map[events.Kind]bool{}
	variants := map[string]bool{}
	for _, c := range cases {
		b, ok := files[c.name]
		if !ok {
			t.Errorf("%s: no golden file %s/%s.msgpack (run go test ./events -run TestGolden -update)", c.name, goldenV3Dir, c.name)
			continue
		}
		delete(files, c.name)
		got, ok := decodesTo(t, c.name, b, c.fact)
		if !ok {
			continue
		}
		if enc := mustEncode(t, c.fact); !bytes.Equal(enc, b) {
			t.Errorf("%s: Encode no longer writes the committed version 3 bytes:\n got %x\nwant %x", c.name, enc, b)
		}
		kinds[got.Kind()] = true
		for _, v := range unionsOf(got.Body) {
			variants[v] = true
		}
	}
	for name := range files {
		t.Errorf("golden file v3/%s.msgpack has no fixture in goldenFacts; the fixture of a committed file must stay", name)
	}
	for _, k := range events.Kinds() {
		if !kinds[k] {
			t.Errorf("no golden file covers kind %s", k)
		}
	}
	for _, v := range allUnionVariants() {
		if !variants[v] {
			t.Errorf("no golden file covers union variant %s", v)
		}
	}
}

// TestGoldenV4 reads the version 4 files, what the log holds since issue
// 38's third round: each fixture has one, an array of 11 that opens with
// the version 4; read with its subject it decodes to the fixture, read
// without one it is refused (ErrNeedsSubject), and EncodeStored writes
// exactly its bytes.
func TestGoldenV4(t *testing.T) {
	cases := goldenFacts(t)
	if *update {
		for _, c := range cases {
			writeGoldenV4(t, c)
		}
	}
	files := goldenV4Files(t)
	for _, c := range cases {
		b, ok := files[c.name]
		if !ok {
			t.Errorf("%s: no golden file %s/%s.msgpack (run go test ./events -run TestGolden -update)", c.name, goldenV4Dir, c.name)
			continue
		}
		delete(files, c.name)
		if !bytes.HasPrefix(b, []byte{0x9b, events.EnvelopeV4}) {
			t.Errorf("%s: a version 4 file opens with an 11-element array and the version 4, this one %x", c.name, b[:min(len(b), 2)])
		}
		subject := goldenSubject(t, c.fact)
		got, err := events.DecodeStored(subject, b)
		if err != nil {
			t.Errorf("%s: committed golden file no longer decodes on %s: %v", c.name, subject, err)
			continue
		}
		if !reflect.DeepEqual(got, c.fact) {
			t.Errorf("%s: decoded\n  %#v\nwant\n  %#v", c.name, got, c.fact)
		}
		if _, err := events.Decode(b); !errors.Is(err, events.ErrNeedsSubject) {
			t.Errorf("%s: read without its subject: %v, want ErrNeedsSubject", c.name, err)
		}
		enc, err := events.EncodeStored(c.fact)
		if err != nil || !bytes.Equal(enc, b) {
			t.Errorf("%s: EncodeStored no longer writes the committed version 4 bytes (%v):\n got %x\nwant %x", c.name, err, enc, b)
		}
	}
	for name := range files {
		t.Errorf("golden file v4/%s.msgpack has no fixture in goldenFacts; the fixture of a committed file must stay", name)
	}
}

// TestGoldenNames guards the fixture list itself: two fixtures with one name
// would share a file, and a name should say which kind the file holds.
func TestGoldenNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range goldenFacts(t) {
		if seen[c.name] {
			t.Errorf("duplicate golden name %q", c.name)
		}
		seen[c.name] = true
		if !strings.HasPrefix(c.name, strings.ReplaceAll(string(c.fact.Kind()), ".", "_")) {
			t.Errorf("golden name %q does not start with its kind %s", c.name, c.fact.Kind())
		}
	}
}

// goldenContainer is the containment of commands run in a container
// environment, as the sandbox reads it back.
func goldenContainer() *events.Containment {
	return &events.Containment{Provider: "container",
		Image: &events.ContainerImage{Ref: "localhost/tools:1", Digest: digest("image config")},
		Features: []events.ContainmentFeature{
			{Name: "address_space_bytes", State: events.ContainmentActive, Limit: 8 << 30},
			{Name: "container", State: events.ContainmentActive, Detail: "podman (runtime runc) container per attempt; commands run with /bin/sh"},
			{Name: "cpu_millis", State: events.ContainmentActive, Limit: 1000},
			{Name: "cpu_seconds", State: events.ContainmentActive, Limit: 600},
			{Name: "image_filesystem", State: events.ContainmentActive, Detail: "the image's file system; the workspace is mounted at /workspace"},
			{Name: "memory_bytes", State: events.ContainmentActive, Limit: 2 << 30},
			{Name: "network_isolation", State: events.ContainmentActive, Detail: "own network namespace, loopback down"},
			{Name: "open_files", State: events.ContainmentActive, Limit: 1024},
			{Name: "pids", State: events.ContainmentActive, Limit: 512},
			{Name: "processes", State: events.ContainmentActive, Limit: 512},
			{Name: "scrubbed_environment", State: events.ContainmentActive},
			{Name: "session", State: events.ContainmentActive},
			{Name: "unprivileged_user", State: events.ContainmentActive},
		},
	}
}

// decodesTo decodes a committed golden file, checks that it decodes to its
// fixture, and reports whether it decoded at all.
func decodesTo(t *testing.T, name string, b []byte, want events.Fact) (events.Fact, bool) {
	t.Helper()
	got, err := events.Decode(b)
	if err != nil {
		t.Errorf("%s: committed golden file no longer decodes: %v", name, err)
		return events.Fact{}, false
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: decoded\n  %#v\nwant\n  %#v", name, got, want)
	}
	return got, true
}
