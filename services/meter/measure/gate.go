package measure

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// GateKind is what a gate holds a result to.
type GateKind string

// The kinds of gate (docs/report.md#gates).
const (
	// GateUnder fails when a pass rate (or a scorer's mean) is below the
	// threshold: --fail-under.
	GateUnder GateKind = "fail-under"
	// GateWorse fails when B is worse than A by more than the threshold:
	// --fail-if-worse.
	GateWorse GateKind = "fail-if-worse"
)

// Gate is one threshold a CI job holds a suite to.
type Gate struct {
	Kind GateKind
	// Scorer names the scorer the gate reads; "" is the pass rate.
	Scorer string
	// Threshold is a pass rate in [0, 1] (GateUnder), points in
	// [0, 100] (GateWorse), or a value in the scorer's own units.
	Threshold float64
	// Given is the flag's value as given, for messages.
	Given string
}

// ErrBadGate is a gate flag whose value cannot be read.
var ErrBadGate = errors.New("bad gate")

// GateError is a gate flag's value that cannot be read: which flag, the
// value, and what is wrong with it.
type GateError struct {
	Flag, Value, Reason string
}

func (e *GateError) Error() string {
	return fmt.Sprintf("--%s %q: %s", e.Flag, e.Value, e.Reason)
}

// Unwrap makes every GateError match ErrBadGate.
func (e *GateError) Unwrap() error { return ErrBadGate }

// ParseGate reads one --fail-under or --fail-if-worse value: a pass rate
// ("0.8" or "80%") or points ("5"), or "scorer=NAME:VALUE" for a
// scorer's mean in its own units.
func ParseGate(kind GateKind, value string) (Gate, error) {
	g := Gate{Kind: kind, Given: value}
	bad := func(reason string) (Gate, error) {
		return Gate{}, &GateError{Flag: string(kind), Value: value, Reason: reason}
	}
	num := strings.TrimSpace(value)
	if rest, ok := strings.CutPrefix(num, "scorer="); ok {
		name, v, found := strings.Cut(rest, ":")
		if !found || name == "" || v == "" {
			return bad("want scorer=NAME:VALUE, e.g. scorer=quality:0.7")
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return bad(fmt.Sprintf("%q is no number", v))
		}
		if kind == GateWorse && f < 0 {
			return bad("a scorer's allowed drop is not negative")
		}
		g.Scorer, g.Threshold = name, f
		return g, nil
	}
	percent := false
	if p, ok := strings.CutSuffix(num, "%"); ok {
		num, percent = p, true
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		if kind == GateUnder {
			return bad("want a pass rate (0.8 or 80%) or scorer=NAME:VALUE")
		}
		return bad("want points of pass rate (5 is 5 points) or scorer=NAME:VALUE")
	}
	switch {
	case kind == GateUnder && percent:
		f /= 100
		fallthrough
	case kind == GateUnder:
		if f < 0 || f > 1 {
			return bad("a pass rate is between 0 and 1 (or 0% and 100%)")
		}
	case percent:
		return bad("give points without %: 5 is 5 points of pass rate")
	case f < 0 || f > 100:
		return bad("points of pass rate are between 0 and 100")
	}
	g.Threshold = f
	return g, nil
}

// GateFailure is a gate that does not hold, and why.
type GateFailure struct {
	Gate   string `json:"gate"`
	Detail string `json:"detail"`
}

func (g Gate) name() string { return "--" + string(g.Kind) + " " + g.Given }

// CheckReport holds every treatment of a suite's report to the
// --fail-under gates (a --fail-if-worse gate needs a baseline: CheckComparison).
func CheckReport(r Report, gates []Gate) []GateFailure {
	var out []GateFailure
	for _, g := range gates {
		if g.Kind == GateUnder {
			out = append(out, under(g, r.Treatments)...)
		}
	}
	return out
}

// under holds each treatment to one --fail-under gate.
func under(g Gate, treatments []TreatmentReport) []GateFailure {
	var out []GateFailure
	fail := func(format string, a ...any) {
		out = append(out, GateFailure{Gate: g.name(), Detail: fmt.Sprintf(format, a...)})
	}
	for _, t := range treatments {
		if g.Scorer == "" {
			switch {
			case t.PassRate == nil:
				fail("treatment %s: no attempt was graded passed or failed", t.Treatment)
			case *t.PassRate < g.Threshold:
				fail("treatment %s: pass rate %.1f%% (%d of %d) is under %.1f%%", t.Treatment, 100**t.PassRate, t.Passed, t.Graded, 100*g.Threshold)
			}
			continue
		}
		s, ok := scorerOf(t.Scores, g.Scorer)
		if !ok || s.Mean == nil {
			fail("treatment %s: no graded attempt has a value of scorer %s%s", t.Treatment, g.Scorer, scorerNames(t.Scores, "its scorers"))
			continue
		}
		// The threshold is in the scorer's units, the mean mapped onto
		// [0, 1]: compare them in the units the user wrote.
		mean, eps := s.raw(*s.Mean), s.slack()
		switch {
		case s.LowerIsBetter && mean > g.Threshold+eps:
			fail("treatment %s: scorer %s's mean %.4g is above %.4g (lower is better)", t.Treatment, g.Scorer, mean, g.Threshold)
		case !s.LowerIsBetter && mean < g.Threshold-eps:
			fail("treatment %s: scorer %s's mean %.4g is under %.4g", t.Treatment, g.Scorer, mean, g.Threshold)
		}
	}
	return out
}

// raw maps a value on [0, 1] back onto the scorer's scale, the units a
// scorer gate's threshold is written in.
func (s ScorerSummary) raw(mapped float64) float64 { return s.Min + mapped*(s.Max-s.Min) }

// slack is how far a mean mapped back to the scale may stray from a
// threshold it equals: mapping to [0, 1] and back rounds (76 of 100 comes
// back as 75.99999999999999), and a mean exactly at the threshold holds.
func (s ScorerSummary) slack() float64 { return 1e-9 * (s.Max - s.Min) }

// scorerNames lists the scorers a gate could have named, for a gate
// whose scorer has no value: a misspelt name shows beside the right one
// (" (what: a, b)", or "" with none).
func scorerNames(ss []ScorerSummary, what string) string {
	if len(ss) == 0 {
		return ""
	}
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.Scorer
	}
	return " (" + what + ": " + strings.Join(names, ", ") + ")"
}

func scorerOf(ss []ScorerSummary, name string) (ScorerSummary, bool) {
	for _, s := range ss {
		if s.Scorer == name {
			return s, true
		}
	}
	return ScorerSummary{}, false
}

// CheckComparison holds a comparison across suites to the gates:
// --fail-under to B's paired treatments, --fail-if-worse to the overall
// paired change B − A (its estimate). A gate whose figure the comparison
// withholds (an identity unknown, no pair graded) does not hold: what
// cannot be measured cannot pass.
func CheckComparison(c SuiteComparison, gates []Gate) []GateFailure {
	var out []GateFailure
	var paired []TreatmentReport
	for _, p := range c.Treatments {
		for _, t := range c.B.Treatments {
			if t.Treatment == p.B {
				paired = append(paired, t)
			}
		}
	}
	for _, g := range gates {
		if g.Kind == GateUnder {
			out = append(out, under(g, paired)...)
			continue
		}
		fail := func(format string, a ...any) {
			out = append(out, GateFailure{Gate: g.name(), Detail: fmt.Sprintf(format, a...)})
		}
		o := c.Overall
		if !c.A.Complete {
			// B's completeness is the command's to check (exit 4); A's
			// figures move the change as much, and a pass A has yet to
			// count is a regression this gate cannot see.
			fail("suite A (%s) is not complete: %s; its figures may still move", c.A.Source, unsettled(c.A.Treatments))
			continue
		}
		if o.Label == LabelUnknown {
			fail("the paired comparison is withheld: %s", o.Note)
			continue
		}
		if g.Scorer == "" {
			switch {
			case o.Change == nil:
				fail("no attempt was graded on both sides: nothing to compare")
			case o.Change.Points < -g.Threshold:
				fail("B's pass rate is %.1f points under A's over %d pairs (%.1f%% → %.1f%%), more than %.4g", -o.Change.Points, o.Pairs,
					100**o.RateA, 100**o.RateB, g.Threshold)
			}
			continue
		}
		var d *ScoreDifference
		for i := range o.Scores {
			if o.Scores[i].Scorer == g.Scorer {
				d = &o.Scores[i]
			}
		}
		if d == nil || d.Pairs == 0 {
			var names []ScorerSummary
			for _, sd := range o.Scores {
				names = append(names, ScorerSummary{Scorer: sd.Scorer})
			}
			fail("no pair has a value of scorer %s on both sides%s", g.Scorer, scorerNames(names, "the scorers compared"))
			continue
		}
		// The pairs' means are mapped onto [0, 1]; the allowed drop is in
		// the scorer's units, so both go back onto B's scale.
		var scale ScorerSummary
		found := false
		for _, t := range paired {
			if s, ok := scorerOf(t.Scores, g.Scorer); ok {
				scale, found = s, true
			}
		}
		if !found || d.MeanA == nil || d.MeanB == nil {
			fail("no scale of scorer %s in B's treatments: nothing to compare", g.Scorer)
			continue
		}
		a, b := scale.raw(*d.MeanA), scale.raw(*d.MeanB)
		drop := a - b
		if scale.LowerIsBetter {
			drop = -drop
		}
		if drop > g.Threshold+scale.slack() {
			fail("scorer %s's mean went from %.4g (A) to %.4g (B) over %d pairs: worse by %.4g, more than %.4g", g.Scorer, a, b, d.Pairs, drop, g.Threshold)
		}
	}
	return out
}

// unsettled says how many attempts of a suite's treatments are awaiting
// their grade or disputed.
func unsettled(ts []TreatmentReport) string {
	awaiting, disputed := 0, 0
	for _, t := range ts {
		awaiting += t.Awaiting
		disputed += t.Disputed
	}
	return fmt.Sprintf("%d awaiting, %d disputed by an unresolved grade.conflict", awaiting, disputed)
}
