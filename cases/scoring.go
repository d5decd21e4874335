package cases

import (
	"fmt"
	"math"
	"regexp"

	"github.com/factline/factline/events"
)

// Score formats a command instrument can read its score from.
const (
	// ScoreFormatJSONLine reads the last line of the command's output (or
	// of file) that is a JSON object with a numeric member "score"; its
	// other numeric members are values too.
	ScoreFormatJSONLine = "json_line"
	// ScoreFormatJUnit reads the JUnit XML report the command wrote to
	// file: the score is the passed tests over the tests that ran.
	ScoreFormatJUnit = "junit"
)

// CommandScore says where a command instrument reads a score from, beside
// its exit code.
type CommandScore struct {
	// Format is json_line or junit.
	Format string `yaml:"format" json:"format"`
	// File is the file the command writes the score to, relative to the
	// workspace root: required for junit; for json_line, the command's
	// output is read when it is empty.
	File string `yaml:"file,omitempty" json:"file,omitempty"`
}

// Scorer is one of a case's scorers: a named number read from one
// instrument's result, on a declared scale (docs/grading.md#scores).
type Scorer struct {
	// ID names the scorer (a subject token), unique in the case.
	ID string `yaml:"id" json:"id"`
	// Instrument is the ID of the instrument whose result it reads.
	Instrument string `yaml:"instrument" json:"instrument"`
	// Key is the value of the instrument's score it reads. Default
	// "score" when the instrument yields a score, and empty (the
	// instrument's outcome: 1 passed, 0 failed) when it does not.
	Key string `yaml:"key,omitempty" json:"key,omitempty"`
	// Scale is [min, max] of the raw value. Default: a judge's scale, or
	// [0, 1].
	Scale []float64 `yaml:"scale,omitempty" json:"scale,omitempty"`
	// HigherIsBetter says which way the scorer improves. Default true.
	HigherIsBetter *bool `yaml:"higher_is_better,omitempty" json:"higher_is_better,omitempty"`
	// Decides makes this the scorer that decides its instrument's outcome:
	// passed when the raw value reaches PassAt. At most one per case.
	Decides bool `yaml:"decides,omitempty" json:"decides,omitempty"`
	// PassAt is the deciding scorer's threshold, on its scale.
	PassAt *float64 `yaml:"pass_at,omitempty" json:"pass_at,omitempty"`
}

// Higher reports whether larger values of the scorer are better.
func (s Scorer) Higher() bool { return s.HigherIsBetter == nil || *s.HigherIsBetter }

// Min and Max return the scorer's scale (after normalise).
func (s Scorer) Min() float64 { return s.Scale[0] }

// Max returns the upper end of the scorer's scale.
func (s Scorer) Max() float64 { return s.Scale[1] }

// Deciding returns the scorer that decides instrument id's outcome, if any.
func (g *Grading) Deciding(id string) (Scorer, bool) {
	if g == nil {
		return Scorer{}, false
	}
	for _, s := range g.Scorers {
		if s.Decides && s.Instrument == id {
			return s, true
		}
	}
	return Scorer{}, false
}

// scoreKey is what a value name of a JSON score line may be.
var scoreKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)

func (s *CommandScore) check(f string) error {
	switch s.Format {
	case ScoreFormatJSONLine:
	case ScoreFormatJUnit:
		if s.File == "" {
			return fieldErr(f+".file", "required: the JUnit XML report the command writes")
		}
	case "":
		return fieldErr(f+".format", "required (%s or %s)", ScoreFormatJSONLine, ScoreFormatJUnit)
	default:
		return fieldErr(f+".format", "unknown format %q (want %s or %s)", s.Format, ScoreFormatJSONLine, ScoreFormatJUnit)
	}
	if s.File != "" {
		if err := checkRelPath(s.File); err != nil {
			return fieldErr(f+".file", "%v", err)
		}
	}
	return nil
}

// checkScale checks a declared [min, max].
func checkScale(f string, scale []float64) error {
	if len(scale) != 2 {
		return fieldErr(f, "want [min, max], got %d numbers", len(scale))
	}
	for _, v := range scale {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fieldErr(f, "%v is not a finite number", v)
		}
	}
	if !(scale[0] < scale[1]) {
		return fieldErr(f, "[%v, %v] is empty: max must exceed min", scale[0], scale[1])
	}
	return nil
}

// checkScorers checks the scorers against the instruments (already
// checked) and fills in their defaults.
func (g *Grading) checkScorers(field string) error {
	seen := map[string]bool{}
	deciding := ""
	for i := range g.Scorers {
		s := &g.Scorers[i]
		f := fmt.Sprintf("%s.scorers[%d]", field, i)
		if err := events.ValidateToken("id", s.ID); err != nil {
			return tokenErr(f+".id", err)
		}
		if seen[s.ID] {
			return fieldErr(f+".id", "duplicate scorer id %q", s.ID)
		}
		seen[s.ID] = true
		if s.Instrument == "" {
			return fieldErr(f+".instrument", "required: the instrument whose result the scorer reads")
		}
		in, ok := g.Instrument(s.Instrument)
		if !ok {
			return fieldErr(f+".instrument", "no instrument with id %q", s.Instrument)
		}
		if err := s.checkKey(f, in); err != nil {
			return err
		}
		if s.Scale == nil {
			s.Scale = []float64{0, 1}
			if in.Kind == InstrumentJudge && s.Key != "" {
				s.Scale = append([]float64(nil), in.Scale...)
			}
		}
		if err := checkScale(f+".scale", s.Scale); err != nil {
			return err
		}
		if s.Key == "" && (s.Scale[0] != 0 || s.Scale[1] != 1) {
			return fieldErr(f+".scale", "a scorer of an instrument's outcome is on [0, 1] (1 passed, 0 failed)")
		}
		switch {
		case s.Decides && s.PassAt == nil:
			return fieldErr(f+".pass_at", "required: the deciding scorer's threshold")
		case !s.Decides && s.PassAt != nil:
			return fieldErr(f+".pass_at", "only the deciding scorer (decides: true) has a threshold")
		case s.Decides && s.Key == "":
			return fieldErr(f+".decides", "a scorer of %s's outcome cannot decide that outcome", s.Instrument)
		case s.Decides && deciding != "":
			return fieldErr(f+".decides", "scorer %q already decides; at most one scorer decides", deciding)
		}
		if s.Decides {
			deciding = s.ID
			if p := *s.PassAt; math.IsNaN(p) || p < s.Scale[0] || p > s.Scale[1] {
				return fieldErr(f+".pass_at", "%v is outside the scale [%v, %v]", p, s.Scale[0], s.Scale[1])
			}
		}
	}
	return nil
}

// checkKey checks (and defaults) the value a scorer reads against what
// its instrument yields.
func (s *Scorer) checkKey(f string, in Instrument) error {
	var yields string // the score source the instrument yields, if any
	switch {
	case in.Kind == InstrumentCommand && in.Score != nil:
		yields = in.Score.Format
	case in.Kind == InstrumentJudge && in.Scale != nil:
		yields = "judge"
	}
	if s.Key == "" {
		if yields != "" {
			s.Key = "score"
		}
		return nil
	}
	switch yields {
	case "":
		return fieldErr(f+".key", "instrument %q yields no score, only its outcome (leave key out); give it a score (a command) or a scale (a judge)", in.ID)
	case ScoreFormatJSONLine:
		if !scoreKey.MatchString(s.Key) {
			return fieldErr(f+".key", "%q is not a member name of a score line", s.Key)
		}
	default:
		if s.Key != "score" {
			return fieldErr(f+".key", "instrument %q yields only \"score\"", in.ID)
		}
	}
	return nil
}
