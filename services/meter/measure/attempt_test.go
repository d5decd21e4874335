package measure

import (
	"testing"
	"unsafe"

	"github.com/factline/factline/events"
)

// maxAttemptBytes bounds the packed record a suite's fold keeps of each
// run: 112 bytes (the one allocation a run, its shared parts apart); the
// record that kept each fact's body was 264, with ~450 more behind it.
const maxAttemptBytes = 112

// An Attempt is numbers and pointers to what runs share, no bigger than
// maxAttemptBytes: every byte of it is held once for each run ended of a
// suite until the suite is reported.
func TestAnAttemptIsPacked(t *testing.T) {
	if n := unsafe.Sizeof(Attempt{}); n > maxAttemptBytes {
		t.Fatalf("an Attempt is %d bytes, more than %d", n, maxAttemptBytes)
	}
}

// oneRun returns the row of the one attempt of a one-case suite after
// facts, folded in order.
func oneRun(t *testing.T, facts func(l *suiteLog, run string)) AttemptRow {
	t.Helper()
	l := newSuite(t, submitted([]string{"c"}, []string{"t"}, 1))
	run := l.member("c", "t", 1).Run
	l.add(run, events.RunRequested{Case: "c", CaseDigest: d("case:c"), Treatment: "t", TreatmentDigest: d("treatment:t"),
		Trial: 1, Identity: d("t")}, events.OwnerMeter)
	facts(l, run)
	r := l.report()
	if len(r.Attempts) != 1 {
		t.Fatalf("%d rows", len(r.Attempts))
	}
	return r.Attempts[0]
}

func verdictOn(run string, snapshot events.Digest, revision uint32, result events.VerdictResult) events.GradeVerdict {
	return events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: run, SnapshotID: snapshot, Revision: revision, Result: result,
		Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}}}}
}

// The grade counted is the newest sealed snapshot's, whichever snapshot
// was graded first and however often the run sealed again: the packed
// grade moves among the others when a new snapshot is sealed, and is
// found there when an older one is sealed again.
func TestTheGradeCountedFollowsTheNewestSeal(t *testing.T) {
	end := events.RunEnded{Status: events.RunDone, Reason: "done", Spent: events.Spent{Steps: 1}}
	// gradedTwice seals snapshot a, ends, has a pass, then seals b and
	// has it fail.
	gradedTwice := func(l *suiteLog, run string) {
		l.add(run, events.CandidateSealed{SnapshotDigest: d("a")}, events.OwnerRunner)
		l.add(run, end, events.OwnerRunner)
		l.add(run, verdictOn(run, d("a"), 1, events.VerdictOK()), events.OwnerGrader)
		l.add(run, events.CandidateSealed{SnapshotDigest: d("b")}, events.OwnerRunner)
		l.add(run, verdictOn(run, d("b"), 1, events.VerdictFail()), events.OwnerGrader)
	}
	cases := []struct {
		name  string
		facts func(l *suiteLog, run string)
		want  Outcome
		rev   uint32
	}{
		{"sealed again after its grade", func(l *suiteLog, run string) {
			gradedTwice(l, run)
		}, OutcomeFailed, 1},
		{"the first snapshot sealed again", func(l *suiteLog, run string) {
			gradedTwice(l, run)
			l.add(run, events.CandidateSealed{SnapshotDigest: d("a")}, events.OwnerRunner)
			l.add(run, verdictOn(run, d("a"), 2, events.VerdictOK()), events.OwnerGrader)
		}, OutcomePassed, 2},
		{"the first snapshot sealed again, graded no more", func(l *suiteLog, run string) {
			gradedTwice(l, run)
			l.add(run, events.CandidateSealed{SnapshotDigest: d("a")}, events.OwnerRunner)
		}, OutcomePassed, 1},
		{"an older revision after a newer one", func(l *suiteLog, run string) {
			l.add(run, events.CandidateSealed{SnapshotDigest: d("a")}, events.OwnerRunner)
			l.add(run, end, events.OwnerRunner)
			l.add(run, verdictOn(run, d("a"), 2, events.VerdictFail()), events.OwnerGrader)
			l.add(run, verdictOn(run, d("a"), 1, events.VerdictOK()), events.OwnerGrader)
		}, OutcomeFailed, 2},
		{"graded before it was sealed", func(l *suiteLog, run string) {
			l.add(run, end, events.OwnerRunner)
			l.add(run, verdictOn(run, d("a"), 1, events.VerdictOK()), events.OwnerGrader)
			l.add(run, events.CandidateSealed{SnapshotDigest: d("a")}, events.OwnerRunner)
		}, OutcomePassed, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if r := oneRun(t, c.facts); r.Outcome != c.want || r.Revision != c.rev {
				t.Fatalf("outcome %s revision %d, want %s revision %d (%s)", r.Outcome, r.Revision, c.want, c.rev, r.Reason)
			}
		})
	}
}

// A snapshot digest of another form than sha256's lower-case hex (which
// no valid fact holds, but the fold never refuses) is kept as it is, and
// its grade is the one counted.
func TestASnapshotOfAnotherFormIsKeptAsItIs(t *testing.T) {
	odd := events.Digest("sha256:" + string(d("a"))[7:70] + "A")
	a := foldAttempt(events.CandidateSealed{SnapshotDigest: odd},
		events.RunEnded{Status: events.RunDone, Reason: "done"},
		verdictOn("r", d("a"), 1, events.VerdictFail()), verdictOn("r", odd, 1, events.VerdictOK()))
	v, ok := verdictOf(a)
	if a.Snapshot() != odd || !ok || v.SnapshotID != odd || v.Result.Type() != events.VerdictOK().Type() {
		t.Fatalf("snapshot %q, grade %v %+v", a.Snapshot(), ok, v)
	}
}

// foldAttempt folds bodies into an Attempt as one run's facts, unchecked
// (a fact's validation apart: the fold never refuses what it is given).
func foldAttempt(bodies ...events.Body) *Attempt {
	var s sharedValues
	a := newAttempt()
	for i, b := range bodies {
		a.apply(&s, events.Fact{Suite: "s", Run: "r", TaskGeneration: 1, Position: uint64(i + 1), Body: b}, i+1)
	}
	return a
}

// A run's spent tokens and cost are what its run.ended says, whether or
// not they are its replies' sums (which the fold keeps them as when they
// are), and a reply folded after the end leaves them so.
func TestTheSpentIsRunEndedsWhateverTheRepliesSum(t *testing.T) {
	cost := func(c uint64) *uint64 { return &c }
	reply := events.ModelReplied{Turn: 1, Provider: "p", Usage: &events.Usage{InputTokens: 100, OutputTokens: 5, Cost: cost(3)}}
	ended := func(tokens, c uint64) events.RunEnded {
		return events.RunEnded{Status: events.RunDone, Reason: "done", Spent: events.Spent{Steps: 1, Tokens: &tokens, Cost: &c, Millis: 7}}
	}
	cases := []struct {
		name          string
		facts         func(l *suiteLog, run string)
		tokens, cost  uint64
		input, output *uint64
	}{
		{"the replies' sums", func(l *suiteLog, run string) {
			l.add(run, reply, events.OwnerRunner)
			l.add(run, ended(105, 3), events.OwnerRunner)
		}, 105, 3, u64(100), u64(5)},
		{"more than the replies'", func(l *suiteLog, run string) {
			l.add(run, reply, events.OwnerRunner)
			l.add(run, ended(205, 9), events.OwnerRunner)
		}, 205, 9, nil, nil},
		{"a reply after the end", func(l *suiteLog, run string) {
			l.add(run, reply, events.OwnerRunner)
			l.add(run, ended(105, 3), events.OwnerRunner)
			l.add(run, reply, events.OwnerRunner)
		}, 105, 3, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := oneRun(t, c.facts)
			if r.Tokens == nil || *r.Tokens != c.tokens || r.Cost == nil || *r.Cost != c.cost || r.Millis == nil || *r.Millis != 7 {
				t.Fatalf("tokens %v cost %v millis %v, want %d, %d, 7", r.Tokens, r.Cost, r.Millis, c.tokens, c.cost)
			}
			if (r.InputTokens == nil) != (c.input == nil) || c.input != nil && (*r.InputTokens != *c.input || *r.OutputTokens != *c.output) {
				t.Fatalf("input %v output %v, want %v %v", r.InputTokens, r.OutputTokens, c.input, c.output)
			}
		})
	}
}

// The identity a run was claimed as is the newest run.claimed's, whether
// it is the one requested (kept as a flag) or not, and whether the claim
// was folded before the request or after it.
func TestTheClaimedIdentityIsTheNewestClaims(t *testing.T) {
	fold := foldAttempt
	req := events.RunRequested{Case: "c", CaseDigest: d("case:c"), Treatment: "t", TreatmentDigest: d("treatment:t"), Trial: 3, Identity: d("asked")}
	claim := func(id events.Digest) events.RunClaimed {
		return events.RunClaimed{Runner: "r", Lease: 1, Identity: id}
	}
	for name, c := range map[string]struct {
		a    *Attempt
		want events.Digest
	}{
		"as requested":              {fold(req, claim(d("asked"))), d("asked")},
		"as another":                {fold(req, claim(d("other"))), d("other")},
		"claimed before requested":  {fold(claim(d("asked")), req), d("asked")},
		"another, then as asked":    {fold(req, claim(d("other")), claim(d("asked"))), d("asked")},
		"as asked, then another":    {fold(req, claim(d("asked")), claim(d("other"))), d("other")},
		"claimed without identity":  {fold(req, claim("")), ""},
		"as asked, then none named": {fold(req, claim(d("asked")), claim("")), d("asked")},
	} {
		if got := c.a.ClaimedIdentity(); got != c.want || !c.a.Claimed() {
			t.Errorf("%s: claimed %v as %q, want %q", name, c.a.Claimed(), got, c.want)
		}
		if r, ok := c.a.Request(); !ok || r.Trial != 3 || r.Identity != d("asked") {
			t.Errorf("%s: request %+v", name, r)
		}
	}
}

// Runs whose grades and ends differ in more than a shared copy can serve
// (a veto's and an end's reason of their own every run, past
// maxGradesAKey grades alike but for that) keep each their own: every
// row says its own run's.
func TestRunsThatShareNothingKeepTheirOwn(t *testing.T) {
	const trials = 3 * maxGradesAKey
	l := newSuite(t, submitted([]string{"c"}, []string{"t"}, trials))
	for trial := uint32(1); trial <= trials; trial++ {
		run := l.member("c", "t", trial).Run
		l.add(run, events.RunRequested{Case: "c", CaseDigest: d("case:c"), Treatment: "t", TreatmentDigest: d("treatment:t"),
			Trial: trial, Identity: d("t")}, events.OwnerMeter)
		l.add(run, events.CandidateSealed{SnapshotDigest: d(run)}, events.OwnerRunner)
		l.add(run, events.RunEnded{Status: events.RunDone, Reason: "ended as " + run, Spent: events.Spent{Steps: 1}}, events.OwnerRunner)
		v := verdictOn(run, d(run), 1, events.VerdictFail())
		v.Verdict.Vetoes = []events.GradeVeto{{Instrument: "tests", Requirement: "r", Reason: "vetoed " + run, Evidence: []events.EvidenceRef{}}}
		l.add(run, v, events.OwnerGrader)
	}
	for _, r := range l.report().Attempts {
		if r.Outcome != OutcomeFailed || r.EndReason != "ended as "+r.Run || r.FirstVeto == nil || r.FirstVeto.Reason != "vetoed "+r.Run {
			t.Fatalf("run %s: %s, ended %q, veto %+v", r.Run, r.Outcome, r.EndReason, r.FirstVeto)
		}
	}
}
