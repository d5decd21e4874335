package audit

import (
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
)

// gradedSuite is a suite of one case under one treatment, one trial,
// whose run ended and was graded with tests@1 giving tests.
func gradedSuite(t *testing.T, tests events.InstrumentOutcome) *runLog {
	sub := events.SuiteSubmitted{Name: "s", SpecDigest: events.DigestOf([]byte("spec")), Trials: 1,
		Cases:      []events.Ref{{ID: "a", Digest: events.DigestOf([]byte("case a"))}},
		Treatments: []events.Ref{{ID: "t", Digest: events.DigestOf([]byte("treatment t"))}}}
	var run string
	for m := range measure.Members(sub) {
		run = m.Run
	}
	l := &runLog{t: t, run: run}
	l.add(sub)
	l.add(events.RunRequested{Case: "a", CaseDigest: sub.Cases[0].Digest, Treatment: "t", TreatmentDigest: sub.Treatments[0].Digest, Trial: 1})
	l.add(events.RunClaimed{Runner: "a", Lease: 1})
	l.add(events.CandidateSealed{SnapshotDigest: snap})
	l.add(events.RunEnded{Status: events.RunDone, Reason: "done"})
	o := allPass()
	o["tests@1"] = tests
	l.gradeAs(casePlan, o)
	return l
}

// report appends the suite.reported the meter appends for the log as it
// stands.
func (l *runLog) report() {
	l.t.Helper()
	log := measure.NewLog("s")
	for _, f := range l.facts {
		log.Apply(f)
	}
	r := measure.Build(log)
	if !r.Complete {
		l.t.Fatalf("the report is not complete: %+v", r.Attempts)
	}
	data, err := measure.EncodeJSON(r)
	if err != nil {
		l.t.Fatal(err)
	}
	l.add(r.Reported(events.DigestOf(data)))
}

func TestAnHonestReportPasses(t *testing.T) {
	l := gradedSuite(t, errored)
	l.report()
	first := l.last().Body.(events.SuiteReported)
	if vs := Check(l.facts, Options{Finished: true}); len(vs) != 0 {
		t.Fatalf("an honest report: %v", vs)
	}
	// A new version of the instrument that could not run passes the
	// attempt: a second report, both honest.
	o := allPass()
	o["tests@2"] = passed
	l.gradeAs(with(casePlan, "tests", "2"), o)
	l.report()
	if second := l.last().Body.(events.SuiteReported); first.Pending != 1 || second.Passed != 1 {
		t.Fatalf("the reports are %+v and %+v, want pending then passed", first, second)
	}
	if vs := Check(l.facts, Options{Finished: true}); len(vs) != 0 {
		t.Fatalf("two honest reports: %v", vs)
	}
}

// A report recorded a few facts after the one it was built through (other
// runs committed while the meter stored it) still agrees.
func TestAReportRecordedLateAgrees(t *testing.T) {
	l := gradedSuite(t, failed)
	l.report()
	rep := l.last()
	l.facts = l.facts[:len(l.facts)-1]
	l.add(events.GradeInstrument{SnapshotDigest: snap, Result: events.InstrumentResult{Instrument: "tests", Version: "9", Outcome: passed}})
	l.facts = append(l.facts, rep)
	if got := rules(Check(l.facts, Options{})); got != "" {
		t.Fatalf("a late report: %q", got)
	}
}

// The outside report's edit seen from the meter: the verdict flipped to
// passed, the suite.reported left saying failed: the report rebuilt from
// the log disagrees, and the violation says both.
func TestAReportThatDisagreesWithTheLogFails(t *testing.T) {
	l := gradedSuite(t, failed)
	l.report()
	rep := l.last()
	editVerdict(t, l, func(v *events.GraderVerdict) {
		v.Result = events.VerdictOK()
		v.Vetoes[0].Binding = false
	})
	vs := Check(l.facts, Options{})
	wantViolation(t, vs, RuleReportDerived, rep.ID.String(), "says attempts=1 passed=0 failed=1", "the report rebuilt from the log", "passed=1 failed=0")
	wantViolation(t, vs, RuleVerdictDerived, "records passed, the rules derive failed")
}

func TestAReportBeforeTheSuiteIsSettledFails(t *testing.T) {
	l := gradedSuite(t, failed)
	l.facts = l.facts[:5] // submitted, requested, claimed, sealed, ended: no grade
	l.add(events.SuiteReported{ReportDigest: events.DigestOf([]byte("r")), Attempts: 1, Passed: 1})
	wantViolation(t, Check(l.facts, Options{}), RuleReportDerived, l.last().ID.String(), "no complete report can be rebuilt")
}

// honestReport is the report the meter builds of the log as it stands,
// with its JSON.
func (l *runLog) honestReport() (measure.Report, []byte) {
	l.t.Helper()
	log := measure.NewLog("s")
	for _, f := range l.facts {
		log.Apply(f)
	}
	r := measure.Build(log)
	data, err := measure.EncodeJSON(r)
	if err != nil {
		l.t.Fatal(err)
	}
	return r, data
}

// A suite.reported whose counts agree with the log, naming a report blob
// that says something else: the report 'factline run' prints (it reads
// the stored blob) would differ from the log's while every count the fact
// carries holds. The blob is checked: in this build's encoding it must be
// a report the log rebuilds; in another's (an older meter's, which this
// build cannot encode again) its attempts' outcomes must be.
func TestAReportBlobThatSaysOtherThanTheLogFails(t *testing.T) {
	usage := func(r *measure.Report) { tokens := uint64(1); r.Treatments[0].Usage.Tokens = &tokens }
	outcome := func(r *measure.Report) { r.Treatments[0].Passed, r.Treatments[0].Failed = 0, 1 }
	for _, tc := range []struct {
		name      string
		edit      func(*measure.Report)
		otherForm bool // the blob is in another build's encoding
		want      []string
	}{
		{"a usage figure", usage, false, []string{"this build's encoding", "none of the reports rebuilt"}},
		{"an outcome", outcome, false, []string{"this build's encoding", "none of the reports rebuilt"}},
		{"an outcome, another build's", outcome, true, []string{"t: planned=1 passed=0 failed=1", "t: planned=1 passed=1 failed=0"}},
		{"nothing, another build's", func(*measure.Report) {}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := gradedSuite(t, passed)
			r, _ := l.honestReport()
			tc.edit(&r)
			data, err := measure.EncodeJSON(r)
			if err != nil {
				t.Fatal(err)
			}
			if tc.otherForm {
				// A field this build does not know: it decodes, and does
				// not encode back to these bytes.
				data = append([]byte(`{"a_later_field":1,`), data[1:]...)
			}
			d := events.DigestOf(data)
			honest, _ := l.honestReport()
			l.add(honest.Reported(d)) // counts as the log has them
			rep := l.last()
			blobs := func(got events.Digest) ([]byte, bool) { return data, got == d }
			if vs := Check(l.facts, Options{}); len(vs) != 0 {
				t.Fatalf("without the blob the counts agree: %v", vs)
			}
			vs := Check(l.facts, Options{ReportBlob: blobs})
			if tc.want == nil {
				if len(vs) != 0 {
					t.Fatalf("a report blob that says what the log says, in another encoding: %v", vs)
				}
				return
			}
			wantViolation(t, vs, RuleReportDerived, append([]string{rep.ID.String(), string(d)[:15]}, tc.want...)...)
		})
	}
}
