package grade

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/factline/factline/events"
)

// Scorer is one of a case's scorers as the grading core sees it: which
// value of which instrument's result it reads, on what scale, and, for
// the deciding scorer, the threshold that decides that instrument's
// outcome (docs/grading.md#scores).
type Scorer struct {
	ID         string
	Instrument events.InstrumentID
	// Key is the value of the instrument's score it reads; empty for the
	// instrument's outcome (1 passed, 0 failed).
	Key           string
	Min, Max      float64
	LowerIsBetter bool
	// PassAt is set on the deciding scorer only.
	PassAt *float64
}

// Reaches reports whether raw meets the deciding threshold, in the
// scorer's direction.
func (s Scorer) reaches(raw float64) bool {
	if s.LowerIsBetter {
		return raw <= *s.PassAt
	}
	return raw >= *s.PassAt
}

// DecideByScore is the outcome a deciding scorer gives its instrument, once
// the instrument ran to its end: passed when the value it reads reaches
// the threshold, failed when it does not or when there is no such value
// (a score the candidate's code was meant to produce and did not is not
// a pass). detail says which.
func DecideByScore(s Scorer, score *events.InstrumentScore) (events.InstrumentOutcome, string) {
	cmp := "≥"
	if s.LowerIsBetter {
		cmp = "≤"
	}
	raw, why := read(s, score)
	switch {
	case why != "":
		return events.InstrumentFailed, fmt.Sprintf("scorer %s decides: %s", s.ID, why)
	case !inScale(s, raw):
		return events.InstrumentFailed, fmt.Sprintf("scorer %s decides: %s = %s is outside the scale [%s, %s]",
			s.ID, s.Key, num(raw), num(s.Min), num(s.Max))
	case s.reaches(raw):
		return events.InstrumentPassed, fmt.Sprintf("scorer %s decides: %s = %s, %s %s", s.ID, s.Key, num(raw), cmp, num(*s.PassAt))
	}
	return events.InstrumentFailed, fmt.Sprintf("scorer %s decides: %s = %s, not %s %s", s.ID, s.Key, num(raw), cmp, num(*s.PassAt))
}

// Scores returns each scorer's score of the instrument results a verdict
// rests on, in the scorers' order: the raw value mapped onto [0, 1] by the
// scale, or why there is none. Nil when there are no scorers.
func Scores(scorers []Scorer, ins []events.InstrumentResult) []events.Score {
	if len(scorers) == 0 {
		return nil
	}
	out := make([]events.Score, 0, len(scorers))
	for _, s := range scorers {
		sc := events.Score{Scorer: s.ID, Instrument: s.Instrument, Key: s.Key, Min: s.Min, Max: s.Max,
			LowerIsBetter: s.LowerIsBetter, PassAt: s.PassAt}
		raw, why := scoreOf(s, ins)
		switch {
		case why != "":
			sc.Missing = why
		case !inScale(s, raw):
			// Never clipped into the scale: a value the scale cannot hold
			// says the declaration or the instrument is wrong.
			sc.Missing = fmt.Sprintf("%s = %s is outside the scale [%s, %s]", keyName(s), num(raw), num(s.Min), num(s.Max))
		default:
			v := (raw - s.Min) / (s.Max - s.Min)
			sc.Raw, sc.Value = &raw, &v
		}
		out = append(out, sc)
	}
	return out
}

// scoreOf reads a scorer's raw value from the instrument results.
func scoreOf(s Scorer, ins []events.InstrumentResult) (float64, string) {
	i := slices.IndexFunc(ins, func(r events.InstrumentResult) bool { return r.Instrument == s.Instrument })
	if i < 0 {
		return 0, fmt.Sprintf("%s has no result", s.Instrument)
	}
	r := ins[i]
	if s.Key == "" {
		switch r.Outcome {
		case events.InstrumentPassed:
			return 1, ""
		case events.InstrumentFailed:
			return 0, ""
		}
		return 0, fmt.Sprintf("%s %s", r.Instrument, r.Outcome)
	}
	// An abstained instrument measured nothing, whatever it wrote beside:
	// a judge whose reply had a rating but no verdict line did not judge.
	if r.Outcome == events.InstrumentAbstained && r.Score != nil && r.Score.Missing != "" {
		return 0, fmt.Sprintf("%s %s: %s", r.Instrument, r.Outcome, r.Score.Missing)
	}
	if missing(r.Outcome) || r.Outcome == events.InstrumentAbstained {
		return 0, fmt.Sprintf("%s %s", r.Instrument, r.Outcome)
	}
	return read(s, r.Score)
}

// read reads a scorer's key from an instrument's score.
func read(s Scorer, score *events.InstrumentScore) (float64, string) {
	switch {
	case score == nil:
		return 0, fmt.Sprintf("%s recorded no score", s.Instrument)
	case score.Missing != "":
		return 0, score.Missing
	}
	v, ok := score.Value(s.Key)
	if !ok {
		return 0, fmt.Sprintf("%s recorded no value %q", s.Instrument, s.Key)
	}
	return v, ""
}

func inScale(s Scorer, raw float64) bool { return raw >= s.Min && raw <= s.Max }

func keyName(s Scorer) string {
	if s.Key == "" {
		return string(s.Instrument)
	}
	return s.Key
}

func num(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return fmt.Sprint(v)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// sameScorers reports whether a verdict's scores were made by exactly the
// scorers of a plan (the same definitions in the same order): a plan whose
// scorers changed grades again.
func sameScorers(scores []events.Score, scorers []Scorer) bool {
	if len(scores) != len(scorers) {
		return false
	}
	for i, s := range scorers {
		c := scores[i]
		if c.Scorer != s.ID || c.Instrument != s.Instrument || c.Key != s.Key || c.Min != s.Min || c.Max != s.Max ||
			c.LowerIsBetter != s.LowerIsBetter || (c.PassAt == nil) != (s.PassAt == nil) ||
			(c.PassAt != nil && *c.PassAt != *s.PassAt) {
			return false
		}
	}
	return true
}

// ScorersOf returns the scorers a verdict's scores were made by: each score
// records its scorer's definition.
func ScorersOf(scores []events.Score) []Scorer {
	var out []Scorer
	for _, c := range scores {
		out = append(out, Scorer{ID: c.Scorer, Instrument: c.Instrument, Key: c.Key, Min: c.Min, Max: c.Max,
			LowerIsBetter: c.LowerIsBetter, PassAt: c.PassAt})
	}
	return out
}

// scoreConflicts adds to out where a scorer's raw value in the new revision
// differs from the one before it: the same scorer reading the same value of
// the same instrument, measured both times. A new scale over the same
// measurement, or a score missing on either side, disagrees with nothing.
// One instrument has at most one conflict per revision (its message ID
// names the instrument), so a score's reason joins the instrument's.
func scoreConflicts(out []events.GradeConflict, prev, next events.GraderVerdict) []events.GradeConflict {
	for _, n := range next.Scores {
		i := slices.IndexFunc(prev.Scores, func(p events.Score) bool {
			return p.Scorer == n.Scorer && p.Instrument == n.Instrument && p.Key == n.Key
		})
		if i < 0 || n.Raw == nil || prev.Scores[i].Raw == nil || *n.Raw == *prev.Scores[i].Raw {
			continue
		}
		reason := fmt.Sprintf("score %s = %s where revision %d scored %s", n.Scorer, num(*n.Raw), prev.Revision, num(*prev.Scores[i].Raw))
		if j := slices.IndexFunc(out, func(c events.GradeConflict) bool { return c.Instrument == n.Instrument }); j >= 0 {
			out[j].Reason += "; " + reason
			continue
		}
		out = append(out, events.GradeConflict{SnapshotDigest: next.SnapshotID, Revision: next.Revision,
			ConflictsWith: prev.Revision, Instrument: n.Instrument, Reason: reason})
	}
	return out
}
