package audit

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/grader/grade"
)

// Rules over grades: a grade is what the grader's rules make of the
// instrument results committed before it, never what a verdict says of
// itself.
const (
	// RuleVerdictDerived: every grade.verdict is the one the grader's pure
	// core (grade.Decide, grade.DecideInvalid) derives from the run's facts
	// before it: the same revision, instruments, vetoes and result; and it
	// rests on every instrument with a result on its snapshot (and, where
	// the case is known, on the instruments the case declares).
	RuleVerdictDerived = "verdict-derived"
	// RuleConflictDerived: the grade.conflict facts of a revision are the
	// ones the grader's rules raise against the revision before it, no
	// more and no fewer.
	RuleConflictDerived = "conflict-derived"
)

// checkGrades re-derives every verdict of a run. declared is the grading
// plan the run's case declares, nil when it is not known: the plan is
// then read from the facts (see planFor).
func checkGrades(r *run, declared *grade.Policy) []Violation {
	var out []Violation
	add := func(rule, format string, args ...any) {
		out = append(out, Violation{r.suite, r.name, rule, fmt.Sprintf(format, args...)})
	}
	for i, f := range r.facts {
		gv, ok := f.Body.(events.GradeVerdict)
		if !ok {
			continue
		}
		v := gv.Verdict
		before := r.facts[:i]
		st := grade.Fold(before)
		what := fmt.Sprintf("grade.verdict revision %d of %s %s", v.Revision, short(v.SnapshotID), factAt(f))
		if v.SnapshotID == grade.NoCandidate {
			if diff := verdictDiff(v, grade.DecideInvalid(st, r.name).Verdict); diff != "" {
				add(RuleVerdictDerived, "%s: %s", what, diff)
			}
			continue
		}
		if missing := leftOut(v, st, declared); missing != "" {
			add(RuleVerdictDerived, "%s: %s", what, missing)
		}
		var d grade.Decision
		diff := ""
		for j, p := range planFor(v, st, declared) {
			got := grade.Decide(st, r.name, v.SnapshotID, p)
			gotDiff := verdictDiff(v, got.Verdict)
			if j == 0 || gotDiff == "" {
				d, diff = got, gotDiff
			}
			if gotDiff == "" {
				break
			}
		}
		if diff != "" {
			add(RuleVerdictDerived, "%s: %s; it rests on %s", what, diff, restsOn(v, st, before))
			continue
		}
		out = append(out, checkConflicts(r, v, d.Conflicts)...)
	}
	return out
}

// planFor returns the grading plan a verdict was decided under, as far as
// the log tells it: the verdict's instruments in its order (the grader
// lists a plan's instruments in plan order); whether each is required,
// from the case where it declares that instrument and version, else from
// its committed result when this revision ran it (the grader records the
// plan's word there), else from the verdict; whether it binds and the
// requirement it vetoes, from the case, else from the verdict's veto. A
// plan from the facts alone cannot tell whether the case lets an advisory
// instrument be missing: both are returned, and either may derive the
// verdict.
func planFor(v events.GraderVerdict, st grade.Run, declared *grade.Policy) []grade.Policy {
	earlier := map[grade.Key]bool{}
	for _, old := range st.Verdicts[v.SnapshotID] {
		for _, in := range old.Instruments {
			earlier[grade.Key{ID: in.Instrument, Version: in.Version}] = true
		}
	}
	var p grade.Policy
	for _, in := range v.Instruments {
		k := grade.Key{ID: in.Instrument, Version: in.Version}
		gi := grade.Instrument{ID: in.Instrument, Version: in.Version, Required: in.Required, Requirement: events.RequirementID(in.Instrument)}
		if rec, ok := st.Results[v.SnapshotID][k]; ok && !earlier[k] {
			gi.Required = rec.Result.Required
		}
		gi.Binding = gi.Required
		if i := slices.IndexFunc(v.Vetoes, func(x events.GradeVeto) bool { return x.Instrument == in.Instrument }); i >= 0 {
			gi.Binding, gi.Requirement = v.Vetoes[i].Binding, v.Vetoes[i].Requirement
		}
		if declared != nil {
			if i := slices.IndexFunc(declared.Instruments, func(x grade.Instrument) bool { return x.Key() == k }); i >= 0 {
				gi = declared.Instruments[i]
			}
		}
		p.Instruments = append(p.Instruments, gi)
	}
	if declared != nil {
		p.AllowMissingAdvisory = declared.AllowMissingAdvisory
		return []grade.Policy{p}
	}
	q := p
	q.AllowMissingAdvisory = true
	return []grade.Policy{p, q}
}

// leftOut says which instruments a verdict should rest on and does not:
// every instrument with a result committed on its snapshot before it (a
// plan replaces an instrument's version, never drops the instrument), and
// where the case is known, exactly the case's instruments in its order.
func leftOut(v events.GraderVerdict, st grade.Run, declared *grade.Policy) string {
	ids := make([]events.InstrumentID, len(v.Instruments))
	for i, in := range v.Instruments {
		ids[i] = in.Instrument
	}
	if declared != nil {
		want := make([]events.InstrumentID, len(declared.Instruments))
		for i, in := range declared.Instruments {
			want[i] = in.ID
		}
		if !slices.Equal(ids, want) {
			return fmt.Sprintf("it rests on instruments %v, and the case declares %v", ids, want)
		}
	}
	keys := slices.SortedFunc(maps.Keys(st.Results[v.SnapshotID]), func(a, b grade.Key) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Version, b.Version))
	})
	for _, k := range keys {
		if !slices.Contains(ids, k.ID) {
			return fmt.Sprintf("it leaves out %s, whose result (fact %s) was committed on its snapshot before it", k, st.Results[v.SnapshotID][k].FactID)
		}
	}
	return ""
}

// verdictDiff says how a recorded verdict differs from the derived one
// (nil: the rules derive none), every difference, "" when there is none.
func verdictDiff(rec events.GraderVerdict, derived *events.GraderVerdict) string {
	if derived == nil {
		return "the grader's rules append no verdict here (a revision needs instruments that differ from the revision before it; a run without a candidate is graded invalid once, after it ended)"
	}
	d := *derived
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	if rec.Revision != d.Revision {
		add("it is revision %d, the rules make it revision %d", rec.Revision, d.Revision)
	}
	if rec.AttemptID != d.AttemptID {
		add("it names attempt %q, the rules %q", rec.AttemptID, d.AttemptID)
	}
	if a, b := resultText(rec.Result), resultText(d.Result); a != b {
		add("it records %s, the rules derive %s", a, b)
	}
	if len(rec.Instruments) != len(d.Instruments) {
		add("it lists %d instrument results, the rules %d", len(rec.Instruments), len(d.Instruments))
	} else {
		for i := range rec.Instruments {
			if a, b := instrumentText(rec.Instruments[i]), instrumentText(d.Instruments[i]); a != b {
				add("it records the instrument result %s, the rules %s", a, b)
			}
		}
	}
	if a, b := vetoText(rec.Vetoes), vetoText(d.Vetoes); a != b {
		add("it records vetoes %s, the rules derive %s", a, b)
	}
	return strings.Join(diffs, "; ")
}

// checkConflicts compares the conflicts recorded with a verdict's
// revision with those the rules raise.
func checkConflicts(r *run, v events.GraderVerdict, derived []events.GradeConflict) []Violation {
	var out []Violation
	want := map[string]int{}
	for _, c := range derived {
		want[conflictText(c)]++
	}
	for _, f := range r.facts {
		c, ok := f.Body.(events.GradeConflict)
		if !ok || c.SnapshotDigest != v.SnapshotID || c.Revision != v.Revision {
			continue
		}
		if want[conflictText(c)] > 0 {
			want[conflictText(c)]--
			continue
		}
		out = append(out, Violation{r.suite, r.name, RuleConflictDerived, fmt.Sprintf(
			"grade.conflict %s with revision %d of %s is none the grader's rules raise: %s", factAt(f), v.Revision, short(v.SnapshotID), conflictText(c))})
	}
	for _, text := range slices.Sorted(maps.Keys(want)) {
		for range want[text] {
			out = append(out, Violation{r.suite, r.name, RuleConflictDerived, fmt.Sprintf(
				"revision %d of %s raises a grade.conflict the log does not hold: %s", v.Revision, short(v.SnapshotID), text)})
		}
	}
	return out
}

// restsOn lists a verdict's instruments with the committed results the
// rules read for them, naming each result's fact.
func restsOn(v events.GraderVerdict, st grade.Run, before []events.Fact) string {
	if len(v.Instruments) == 0 {
		return "no instrument"
	}
	positions := map[string]uint64{}
	for _, f := range before {
		if _, ok := f.Body.(events.GradeInstrument); ok {
			positions[f.ID.String()] = f.Position
		}
	}
	parts := make([]string, len(v.Instruments))
	for i, in := range v.Instruments {
		k := grade.Key{ID: in.Instrument, Version: in.Version}
		rec, ok := st.Results[v.SnapshotID][k]
		if !ok {
			parts[i] = fmt.Sprintf("%s (no result committed)", k)
			continue
		}
		parts[i] = fmt.Sprintf("%s %s (fact %s, position %d)", k, rec.Result.Outcome, rec.FactID, positions[rec.FactID])
	}
	return strings.Join(parts, ", ")
}

func resultText(r events.VerdictResult) string {
	switch v := r.Variant().(type) {
	case events.VerdictPending:
		return fmt.Sprintf("pending %v", v.Instruments)
	case events.VerdictInvalid:
		return fmt.Sprintf("invalid (%s)", v.Reason)
	case events.VerdictAbstained:
		return fmt.Sprintf("abstained (%s)", v.Reason)
	}
	return string(r.Type())
}

func instrumentText(r events.InstrumentResult) string {
	req := "advisory"
	if r.Required {
		req = "required"
	}
	return fmt.Sprintf("%s@%s %s %s %q evidence %v", r.Instrument, r.Version, req, r.Outcome, r.Detail, r.Evidence)
}

func vetoText(vs []events.GradeVeto) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		bind := "non-binding"
		if v.Binding {
			bind = "binding"
		}
		parts[i] = fmt.Sprintf("%s on %s %s %q evidence %v", bind, v.Instrument, v.Requirement, v.Reason, v.Evidence)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func conflictText(c events.GradeConflict) string {
	return fmt.Sprintf("%s against revision %d: %s", c.Instrument, c.ConflictsWith, c.Reason)
}

// short is a digest's first 12 hex digits, as the grader's message IDs
// name a snapshot.
func short(d events.Digest) string {
	h := d.Hex()
	return h[:min(12, len(h))]
}
