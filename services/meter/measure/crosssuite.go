package measure

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/factline/factline/events"
	"github.com/factline/factline/stats"
)

// The sides of a comparison across suites: A is the baseline (last
// week's build, a stored export), B the suite under test.
const (
	SideA = "A"
	SideB = "B"
)

// Side is one suite of a comparison across suites: its folded facts and
// where they came from (as the caller names it, e.g. "demo@base.flx").
type Side struct {
	Source string
	Log    *Log
}

// TreatmentPair names a treatment of suite A and the treatment of suite B
// whose attempts pair with its attempts.
type TreatmentPair struct {
	A string `json:"a"`
	B string `json:"b"`
}

// CrossOptions are the choices of a comparison across suites.
type CrossOptions struct {
	// AllowChangedCases pairs the attempts of cases whose content digest
	// differs between the suites (they are listed either way); without it
	// those cases are refused from the pairing.
	AllowChangedCases bool
	// Treatments pairs the suites' treatments; empty pairs every
	// treatment both suites name, or, when they share none and each has
	// exactly one, those two.
	Treatments []TreatmentPair
}

// ErrNoPairing is a comparison across suites that has no treatment to
// pair: the suites share no treatment name and --treatment names none.
var ErrNoPairing = errors.New("no treatment pairs")

// ErrUnknownTreatment is a treatment pair that names a treatment its suite
// does not hold.
var ErrUnknownTreatment = errors.New("no such treatment")

// SuiteSide describes one side of a comparison across suites.
type SuiteSide struct {
	Source     string        `json:"source"`
	Suite      string        `json:"suite"`
	SpecDigest events.Digest `json:"spec_digest"`
	Trials     uint32        `json:"trials"`
	Complete   bool          `json:"complete"`
	// Treatments are the side's treatment rows of its own report.
	Treatments []TreatmentReport `json:"treatments"`
}

// ChangedCase is a case both suites name whose content differs between
// them: its attempts measure different tasks.
type ChangedCase struct {
	Case    string        `json:"case"`
	DigestA events.Digest `json:"digest_a"`
	DigestB events.Digest `json:"digest_b"`
	// Paired is true when --allow-changed-cases let its attempts pair.
	Paired bool `json:"paired"`
}

// Change is B − A of a pass rate in points (100 × the rate difference),
// with the 95% interval of the paired cluster bootstrap when one is given.
type Change struct {
	Points float64  `json:"points"`
	Low    *float64 `json:"low,omitempty"`
	High   *float64 `json:"high,omitempty"`
}

// PairedComparison is the comparison of one treatment pair (or of all of
// them, Overall): the paired statistics of Compare, where A is suite A's
// attempts and B suite B's, and the change B − A.
type PairedComparison struct {
	Treatments TreatmentPair `json:"treatments"`
	Comparison
	// Change is B − A in points; nil when the paired statistics are
	// withheld or no pair was graded on both sides.
	Change *Change `json:"change"`
}

// Verdicts of a case between A and B.
const (
	CaseRegressed = "regressed"
	CaseImproved  = "improved"
	CaseSame      = "same"
	// CaseUnpaired: no trial of the case was graded on both sides.
	CaseUnpaired = "unpaired"
)

// CaseChange is one case under one treatment pair: its paired trials and
// how the pass rate moved from A to B.
type CaseChange struct {
	Case       string        `json:"case"`
	Treatments TreatmentPair `json:"treatments"`
	// Pairs counts the trials graded passed or failed on both sides.
	Pairs   int             `json:"pairs"`
	PassedA int             `json:"passed_a"`
	PassedB int             `json:"passed_b"`
	RateA   *float64        `json:"rate_a"`
	RateB   *float64        `json:"rate_b"`
	WilsonA *stats.Interval `json:"wilson_a"`
	WilsonB *stats.Interval `json:"wilson_b"`
	// Points is B − A in points over the pairs.
	Points  *float64 `json:"points"`
	McNemar *McNemar `json:"mcnemar"`
	Verdict string   `json:"verdict"`
	// Changed is set when the case's content differs between the suites
	// (and --allow-changed-cases paired it).
	Changed bool `json:"changed,omitempty"`
}

// SuiteComparison compares suite B with suite A, attempt by attempt,
// paired on case and trial under each treatment pair.
type SuiteComparison struct {
	A          SuiteSide       `json:"a"`
	B          SuiteSide       `json:"b"`
	Method     Method          `json:"method"`
	Treatments []TreatmentPair `json:"treatment_pairs"`
	// Changed lists the cases whose content differs between A and B.
	Changed []ChangedCase `json:"changed_cases"`
	// OnlyA and OnlyB list the cases one suite holds and the other not.
	OnlyA []string `json:"only_in_a,omitempty"`
	OnlyB []string `json:"only_in_b,omitempty"`
	// Overall pairs every treatment pair's attempts at once (a case under
	// two pairs is two clusters); with one pair it is that pair's.
	Overall PairedComparison `json:"overall"`
	// ByTreatment is each treatment pair's comparison.
	ByTreatment []PairedComparison `json:"by_treatment"`
	Cases       []CaseChange       `json:"cases"`
	// Regressed and Improved name the cases (as case, or treatment/case
	// when more than one pair is compared) whose pass rate fell or rose.
	Regressed []string `json:"regressed"`
	Improved  []string `json:"improved"`
}

// CompareSuites compares suite b with suite a: attempts pair on case ID
// and trial under each treatment pair; a case whose content digest
// differs between the suites is refused from the pairing unless
// opts.AllowChangedCases (and listed either way); the identity components
// that differ are named, and the paired statistics refused where an
// identity is unknown, as within a suite (Compare).
func CompareSuites(a, b Side, opts CrossOptions) (SuiteComparison, error) {
	ra, rb := Build(a.Log), Build(b.Log)
	out := SuiteComparison{A: side(a, ra), B: side(b, rb), Method: ra.Method}
	pairs, err := treatmentPairs(ra, rb, opts.Treatments)
	if err != nil {
		return out, err
	}
	out.Treatments = pairs
	// The cases both suites hold, and whose content they agree on.
	digA, digB := caseDigests(a.Log), caseDigests(b.Log)
	paired := map[string]bool{}
	changed := map[string]bool{}
	for _, c := range ra.Cases {
		db, ok := digB[c]
		switch {
		case !ok:
			out.OnlyA = append(out.OnlyA, c)
		case db != digA[c]:
			out.Changed = append(out.Changed, ChangedCase{Case: c, DigestA: digA[c], DigestB: db, Paired: opts.AllowChangedCases})
			changed[c] = true
			paired[c] = opts.AllowChangedCases
		default:
			paired[c] = true
		}
	}
	for _, c := range rb.Cases {
		if _, ok := digA[c]; !ok {
			out.OnlyB = append(out.OnlyB, c)
		}
	}
	runs := map[string]*Attempt{}
	for id, at := range a.Log.Runs {
		runs[SideA+"/"+id] = at
	}
	for id, at := range b.Log.Runs {
		runs[SideB+"/"+id] = at
	}
	var all []AttemptRow
	for _, p := range pairs {
		rows := sideRows(ra.Attempts, p.A, SideA, paired)
		rows = append(rows, sideRows(rb.Attempts, p.B, SideB, paired)...)
		out.ByTreatment = append(out.ByTreatment, pairedComparison(p, rows, runs))
		for _, r := range rows {
			if len(pairs) > 1 {
				// One cluster per case and pair: the trials of a case under
				// one treatment are what correlate.
				r.Case = p.A + "/" + r.Case
			}
			all = append(all, r)
		}
		for _, c := range ra.Cases {
			if !paired[c] {
				continue
			}
			cc := caseChange(c, p, rows)
			cc.Changed = changed[c]
			name := c
			if len(pairs) > 1 {
				name = p.A + "/" + c
			}
			switch cc.Verdict {
			case CaseRegressed:
				out.Regressed = append(out.Regressed, name)
			case CaseImproved:
				out.Improved = append(out.Improved, name)
			}
			out.Cases = append(out.Cases, cc)
		}
	}
	if len(pairs) == 1 {
		out.Overall = out.ByTreatment[0]
	} else {
		out.Overall = pairedComparison(TreatmentPair{A: "*", B: "*"}, all, runs)
	}
	if !slices.ContainsFunc(ra.Cases, func(c string) bool { return paired[c] }) {
		// No identity can be recorded under both sides of no case: say
		// what the cases are, not that an identity is missing "yet".
		note := nothingPaired(out)
		for i := range out.ByTreatment {
			if out.ByTreatment[i].Label == LabelUnknown {
				out.ByTreatment[i].Note = note
			}
		}
		if out.Overall.Label == LabelUnknown {
			out.Overall.Note = note
		}
	}
	return out, nil
}

// nothingPaired says why A and B pair no case: the cases only one holds,
// and those whose content changed.
func nothingPaired(c SuiteComparison) string {
	var why []string
	if len(c.OnlyA) > 0 {
		why = append(why, "only in A: "+strings.Join(c.OnlyA, ", "))
	}
	if len(c.OnlyB) > 0 {
		why = append(why, "only in B: "+strings.Join(c.OnlyB, ", "))
	}
	if len(c.Changed) > 0 {
		names := make([]string, len(c.Changed))
		for i, ch := range c.Changed {
			names[i] = ch.Case
		}
		why = append(why, "changed since A: "+strings.Join(names, ", ")+" (--allow-changed-cases pairs them)")
	}
	if len(why) == 0 {
		return "A and B pair no case"
	}
	return "A and B pair no case (" + strings.Join(why, "; ") + ")"
}

func side(s Side, r Report) SuiteSide {
	return SuiteSide{Source: s.Source, Suite: r.Suite, SpecDigest: r.SpecDigest, Trials: r.Trials, Complete: r.Complete, Treatments: r.Treatments}
}

// treatmentPairs checks the asked pairs, or finds them.
func treatmentPairs(ra, rb Report, asked []TreatmentPair) ([]TreatmentPair, error) {
	names := func(r Report) []string {
		out := make([]string, len(r.Treatments))
		for i, t := range r.Treatments {
			out[i] = t.Treatment
		}
		return out
	}
	return PairTreatments(ra.Suite, names(ra), rb.Suite, names(rb), asked)
}

// PairTreatments pairs suite A's treatments na with suite B's nb as
// CompareSuites does: the pairs asked for, each naming a treatment its
// suite has (else ErrUnknownTreatment); or the treatments both name; or,
// when each has one, those two; else ErrNoPairing. run --baseline calls
// it before the suite is submitted, with B's treatments from its file.
func PairTreatments(suiteA string, na []string, suiteB string, nb []string, asked []TreatmentPair) ([]TreatmentPair, error) {
	if len(asked) > 0 {
		for _, p := range asked {
			if !slices.Contains(na, p.A) {
				return nil, fmt.Errorf("treatment %q of suite A (%s): %w; it has %s", p.A, suiteA, ErrUnknownTreatment, strings.Join(na, ", "))
			}
			if !slices.Contains(nb, p.B) {
				return nil, fmt.Errorf("treatment %q of suite B (%s): %w; it has %s", p.B, suiteB, ErrUnknownTreatment, strings.Join(nb, ", "))
			}
		}
		return asked, nil
	}
	var out []TreatmentPair
	for _, t := range na {
		if slices.Contains(nb, t) {
			out = append(out, TreatmentPair{A: t, B: t})
		}
	}
	if len(out) == 0 && len(na) == 1 && len(nb) == 1 {
		out = append(out, TreatmentPair{A: na[0], B: nb[0]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: suite A (%s) has treatments %s and suite B (%s) %s, none in common: name the pairs (--treatment A_NAME=B_NAME)",
			ErrNoPairing, suiteA, strings.Join(na, ", "), suiteB, strings.Join(nb, ", "))
	}
	return out, nil
}

// caseDigests maps each case of a suite's submission to its content
// digest.
func caseDigests(l *Log) map[string]events.Digest {
	out := map[string]events.Digest{}
	if l.Submitted != nil {
		for _, c := range l.Submitted.Cases {
			out[c.ID] = c.Digest
		}
	}
	return out
}

// sideRows are the attempt rows of one treatment of one side, of the
// paired cases, relabelled as that side: the treatment becomes the side
// and the run its side-qualified ID, so that Compare pairs them.
func sideRows(rows []AttemptRow, treatment, label string, paired map[string]bool) []AttemptRow {
	var out []AttemptRow
	for _, r := range rows {
		if r.Treatment != treatment || !paired[r.Case] {
			continue
		}
		r.Treatment, r.Run = label, label+"/"+r.Run
		out = append(out, r)
	}
	return out
}

// pairedComparison is Compare of the two sides' rows, and its change B − A.
func pairedComparison(p TreatmentPair, rows []AttemptRow, runs map[string]*Attempt) PairedComparison {
	c := Compare(rows, runs, SideA, SideB)
	out := PairedComparison{Treatments: p, Comparison: c}
	if c.Label == LabelUnknown || c.RateA == nil || c.RateB == nil {
		return out
	}
	ch := &Change{Points: 100 * (*c.RateB - *c.RateA)}
	if c.McNemar != nil && c.Pairs > 0 {
		// From the counts: 100 × (0.95 − 1) is −5.000000000000004, and a
		// gate of exactly 5 points must hold 19 of 20 against 20 of 20.
		ch.Points = 100 * float64(c.McNemar.OnlyB-c.McNemar.OnlyA) / float64(c.Pairs)
	}
	if d := c.Difference; d != nil {
		// Difference is A − B: its interval turned over is B − A's.
		// (+0 keeps a zero bound from printing as -0.0.)
		ch.Low, ch.High = ptr(-100*d.Interval.Hi+0), ptr(-100*d.Interval.Lo+0)
	}
	out.Change = ch
	return out
}

// caseChange is one case's paired trials under a treatment pair.
func caseChange(c string, p TreatmentPair, rows []AttemptRow) CaseChange {
	out := CaseChange{Case: c, Treatments: p, Verdict: CaseUnpaired}
	got := map[string]map[uint32]bool{SideA: {}, SideB: {}}
	for _, r := range rows {
		if r.Case == c && graded(r) {
			got[r.Treatment][r.Trial] = r.Outcome == OutcomePassed
		}
	}
	var onlyA, onlyB int
	for trial, x := range got[SideA] {
		y, ok := got[SideB][trial]
		if !ok {
			continue
		}
		out.Pairs++
		if x {
			out.PassedA++
		}
		if y {
			out.PassedB++
		}
		switch {
		case x && !y:
			onlyA++
		case y && !x:
			onlyB++
		}
	}
	if out.Pairs == 0 {
		return out
	}
	n := float64(out.Pairs)
	out.RateA, out.RateB = ptr(float64(out.PassedA)/n), ptr(float64(out.PassedB)/n)
	out.Points = ptr(100 * float64(out.PassedB-out.PassedA) / n)
	if iv, err := stats.Wilson(out.PassedA, out.Pairs, stats.Z95); err == nil {
		out.WilsonA = &iv
	}
	if iv, err := stats.Wilson(out.PassedB, out.Pairs, stats.Z95); err == nil {
		out.WilsonB = &iv
	}
	if p, err := stats.McNemarExact(onlyA, onlyB); err == nil {
		out.McNemar = &McNemar{OnlyA: onlyA, OnlyB: onlyB, P: p}
	}
	switch {
	case out.PassedB < out.PassedA:
		out.Verdict = CaseRegressed
	case out.PassedB > out.PassedA:
		out.Verdict = CaseImproved
	default:
		out.Verdict = CaseSame
	}
	return out
}
