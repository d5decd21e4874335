package audit

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
)

// RuleReportDerived: every suite.reported says what the meter's pure core
// (measure.Build) makes of the suite's facts before it: a complete report
// with the same counts of attempts and outcomes, rebuilt where the meter
// builds one (after the suite's submission, a run.ended, a grade.verdict
// or its suite.stopped). Where the audit can read the report blob it
// names (Options.ReportBlob), that is held to the log too: a blob in this
// build's encoding must be one of those reports, byte for byte (usage
// figures, rows and all); one in another build's (an older meter's) must
// have the attempts' outcomes of one of them, treatment by treatment.
const RuleReportDerived = "report-derived"

// reportCounts are the counts a suite.reported carries.
type reportCounts struct {
	attempts, passed, failed, pending, invalid, abstained, excluded uint32
}

func countsOf(r events.SuiteReported) reportCounts {
	return reportCounts{r.Attempts, r.Passed, r.Failed, r.Pending, r.Invalid, r.Abstained, r.Excluded}
}

func (c reportCounts) String() string {
	return fmt.Sprintf("attempts=%d passed=%d failed=%d pending=%d invalid=%d abstained=%d excluded=%d",
		c.attempts, c.passed, c.failed, c.pending, c.invalid, c.abstained, c.excluded)
}

// rebuilt is a complete report the log yields, and the fact it was
// rebuilt through.
type rebuilt struct {
	counts  reportCounts
	through events.Fact
}

// checkReports rebuilds a suite's reports from its facts (in log order)
// and checks every suite.reported against them. A report may be recorded
// some facts after the one it was built through (other runs go on
// committing while the meter stores it), so a suite.reported agrees when
// any complete report rebuilt before it has its counts. Reports are built
// only where the meter builds them and only once every planned attempt is
// settled, so the audit costs no more than the meter did.
//
// seqs, when as long as facts, are their stream sequences: a report blob
// is then also rebuilt through the fact its suite.reported's through
// names, whatever its kind (the meter folds the suite's facts in stream
// order and may build its report through any of them).
func checkReports(suite string, facts []events.Fact, seqs []uint64, reportBlob func(events.Digest) ([]byte, bool)) []Violation {
	left := 0
	throughs := map[uint64]bool{} // the facts reports say they were built through
	for _, f := range facts {
		if rep, ok := f.Body.(events.SuiteReported); ok {
			left++
			if rep.Through > 0 {
				throughs[rep.Through] = true
			}
		}
	}
	if len(seqs) != len(facts) {
		seqs = nil
	}
	if left == 0 {
		return nil
	}
	var out []Violation
	log, counter := measure.NewLog(suite), measure.NewCounter(suite)
	// The counter lets go of a settled attempt's facts and asks for them
	// again when its run has another fact: they are all here.
	byRun := map[string][]int{}
	for i, f := range facts {
		byRun[f.Run] = append(byRun[f.Run], i)
	}
	seen := map[reportCounts]bool{}
	var last *rebuilt
	// With the blobs: the digests of the reports rebuilt, and their
	// outcomes treatment by treatment.
	digests, outcomes := map[events.Digest]bool{}, map[string]bool{}
	lastOutcomes := ""
	for i, f := range facts {
		if rep, ok := f.Body.(events.SuiteReported); ok {
			left--
			if rc := countsOf(rep); !seen[rc] {
				derived := "no complete report can be rebuilt from the log before it"
				if last != nil {
					derived = fmt.Sprintf("the report rebuilt from the log through the %s says %s", factOf(last.through), last.counts)
				}
				out = append(out, Violation{suite, events.SuiteScope, RuleReportDerived, fmt.Sprintf(
					"suite.reported %s of report %s says %s; %s", factAt(f), short(rep.ReportDigest), rc, derived)})
			}
			if reportBlob != nil && !digests[rep.ReportDigest] {
				if detail := checkReportBlob(f, rep.ReportDigest, reportBlob, outcomes, lastOutcomes); detail != "" {
					out = append(out, Violation{suite, events.SuiteScope, RuleReportDerived, detail})
				}
			}
		}
		log.Apply(f)
		if err := counter.Apply(f, earlierIn(facts, byRun, i)); err != nil {
			out = append(out, Violation{suite, events.SuiteScope, RuleReportDerived, fmt.Sprintf(
				"the suite's count cannot take the %s: %v", factOf(f), err)})
		}
		through := reportBlob != nil && seqs != nil && throughs[seqs[i]]
		if left == 0 || log.Submitted == nil || !(buildsAfter(f.Kind()) || through) {
			continue
		}
		if uint64(counter.Tally().Settled) < measure.Size(*log.Submitted) {
			continue
		}
		r := measure.Build(log)
		if !r.Complete {
			continue
		}
		rc := countsOf(r.Reported(""))
		seen[rc] = true
		last = &rebuilt{counts: rc, through: f}
		if reportBlob != nil {
			if d, _, err := measure.JSONDigest(r); err == nil {
				digests[d] = true
			}
			lastOutcomes = outcomesOf(r)
			outcomes[lastOutcomes] = true
		}
	}
	return out
}

// checkReportBlob holds the report blob d that the suite.reported f names,
// which is none of the reports rebuilt from the log before it, to the
// log: "" when it agrees, else the violation's detail. A blob the audit
// cannot read is blob-held's to name.
func checkReportBlob(f events.Fact, d events.Digest, reportBlob func(events.Digest) ([]byte, bool), outcomes map[string]bool, lastOutcomes string) string {
	data, ok := reportBlob(d)
	if !ok {
		return ""
	}
	r, again, err := measure.ReadJSONKeeping(bytes.NewReader(data), nil)
	if err != nil {
		return fmt.Sprintf("suite.reported %s names report blob %s, which is no report: %v", factAt(f), d, err)
	}
	derived := "no complete report can be rebuilt from the log before it"
	if lastOutcomes != "" {
		derived = "the newest report rebuilt from the log before it says " + lastOutcomes
	}
	got := outcomesOf(r)
	if again == d {
		// This build encodes the report to these very bytes: the
		// rebuild would have, had the log said the same.
		return fmt.Sprintf("suite.reported %s names report blob %s, in this build's encoding, and it is none of the reports rebuilt from the log before it "+
			"(a figure, a row or an outcome differs; it says %s; %s)", factAt(f), d, got, derived)
	}
	if !outcomes[got] {
		return fmt.Sprintf("suite.reported %s names report blob %s (another build's encoding), whose attempts' outcomes are those of no report rebuilt from the log before it: "+
			"it says %s; %s", factAt(f), d, got, derived)
	}
	return ""
}

// outcomesOf is a report's counts of attempts and outcomes, treatment by
// treatment in name order: what every build's report says alike.
func outcomesOf(r measure.Report) string {
	parts := make([]string, 0, len(r.Treatments))
	for _, t := range r.Treatments {
		parts = append(parts, fmt.Sprintf("%s: planned=%d passed=%d failed=%d pending=%d invalid=%d abstained=%d excluded=%d",
			t.Treatment, t.Planned, t.Passed, t.Failed, t.Pending, t.Invalid, t.Abstained, t.Excluded))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// earlierIn gives a Counter a run's facts before the i-th fact of the
// log, from byRun (each run's indexes into facts, in order).
func earlierIn(facts []events.Fact, byRun map[string][]int, i int) measure.Earlier {
	return func(run string) ([]events.Fact, error) {
		var out []events.Fact
		for _, j := range byRun[run] {
			if j >= i {
				break
			}
			out = append(out, facts[j])
		}
		return out, nil
	}
}

// buildsAfter says whether the meter builds the suite's report after
// folding a fact of kind k: the facts it is delivered, and the
// suite.stopped it appends itself (suite.controlled is delivered too: a
// drained or cancelled suite completes with what ran).
func buildsAfter(k events.Kind) bool {
	switch k {
	case events.KindSuiteSubmitted, events.KindRunEnded, events.KindGradeVerdict, events.KindSuiteStopped, events.KindSuiteControlled:
		return true
	}
	return false
}
