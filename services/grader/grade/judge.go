package grade

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/factline/factline/events"
)

// reasonsCap bounds the judge's reasons kept in a result.
const reasonsCap = 1000

// judgeScoreLine is a judge's rating, on a line as unwrapLine leaves it:
// "SCORE: n" (or "SCORE: n/5", the denominator captured so that one other
// than the scale's maximum is caught); the last one counts.
var judgeScoreLine = regexp.MustCompile(`(?i)^SCORE:[ \t]*([-+]?[0-9]+(?:\.[0-9]+)?)[ \t]*(?:/[ \t]*([0-9]+(?:\.[0-9]+)?))?$`)

// judgeAnyScoreLine is a line that starts as a rating does, readable or
// not: what a reply without a readable rating is quoted by.
var judgeAnyScoreLine = regexp.MustCompile(`(?i)^SCORE:[ \t]*(.*?)$`)

// scoreQuoteCap bounds the unreadable rating a reason quotes.
const scoreQuoteCap = 40

// judgeVerdictLine is the verdict line, as unwrapLine leaves it.
var judgeVerdictLine = regexp.MustCompile(`(?i)^VERDICT:[ \t]*(PASS|FAIL)\b`)

// judgeAnyVerdictLine is any line that starts as a verdict does, left out
// of the reasons.
var judgeAnyVerdictLine = regexp.MustCompile(`(?i)^VERDICT:`)

// unwrapLine takes off the markdown a model commonly dresses a line in:
// the spaces around it, one leading heading marker (#, ##, …) or list
// marker (- or * followed by a space), then emphasis wrapping the whole
// rest (**…** or __…__) or the label alone (**VERDICT:** PASS). Nothing
// looser: a line that is not the documented line once so unwrapped is not
// read as one.
func unwrapLine(line string) string {
	s := strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(s, "#"):
		s = strings.TrimSpace(strings.TrimLeft(s, "#"))
	case len(s) > 1 && (s[0] == '-' || s[0] == '*') && (s[1] == ' ' || s[1] == '\t'):
		s = strings.TrimSpace(s[1:])
	}
	for _, em := range []string{"**", "__"} {
		if len(s) >= 2*len(em) && strings.HasPrefix(s, em) && strings.HasSuffix(s, em) {
			s = strings.TrimSpace(s[len(em) : len(s)-len(em)])
			break
		}
	}
	return unwrapLabel(s)
}

// emphasizedLabel is a line whose label alone is emphasized, "**VERDICT:**
// PASS" or "__SCORE__: 4": the emphasis of models that bold only the label.
var emphasizedLabel = regexp.MustCompile(`(?i)^(\*\*|__)(VERDICT|SCORE)(:?)(\*\*|__)(:?)(.*)$`)

// unwrapLabel takes the emphasis off a line's label, when it opens and
// closes with the same marker and exactly one colon follows the label.
func unwrapLabel(s string) string {
	m := emphasizedLabel.FindStringSubmatch(s)
	if m == nil || m[1] != m[4] || len(m[3])+len(m[5]) != 1 {
		return s
	}
	return m[2] + ":" + m[6]
}

// ReadJudgeVerdict reads a judge's verdict from its reply: its last line
// "VERDICT: PASS" or "VERDICT: FAIL" (in any case, in the markdown
// unwrapLine takes off). ok is false when the reply has none.
func ReadJudgeVerdict(reply string) (_ events.InstrumentOutcome, ok bool) {
	lines := strings.Split(reply, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if m := judgeVerdictLine.FindStringSubmatch(unwrapLine(lines[i])); m != nil {
			if strings.EqualFold(m[1], "FAIL") {
				return events.InstrumentFailed, true
			}
			return events.InstrumentPassed, true
		}
	}
	return "", false
}

// ReadJudgeScore reads a judge's rating on its declared scale [min, max]
// from its reply: the last "SCORE: n" line, with the rest of the reply
// (its reasons) kept. A reply without a rating, with one outside the
// scale, or with one out of another maximum than the scale's ("SCORE: 4/10"
// on [1, 5]), yields no value and says why.
func ReadJudgeScore(reply string, min, max float64) events.InstrumentScore {
	out := events.InstrumentScore{Source: events.ScoreJudge}
	lines := strings.Split(reply, "\n")
	var ms, loose [][]string
	for i, line := range lines {
		u := unwrapLine(line)
		if m := judgeScoreLine.FindStringSubmatch(u); m != nil {
			ms = append(ms, m)
			lines[i] = "" // the rating is not a reason
			continue
		}
		if m := judgeAnyScoreLine.FindStringSubmatch(u); m != nil {
			loose = append(loose, m)
		}
		if judgeAnyVerdictLine.MatchString(u) {
			lines[i] = ""
		}
	}
	out.Reasons = clipTo(strings.TrimSpace(strings.Join(lines, "\n")), reasonsCap)
	if len(ms) == 0 {
		out.Missing = "the judge gave no SCORE line"
		// A line the judge meant as its rating ("SCORE: 40%") is named, so
		// that the rubric, not the judge's silence, is what gets fixed.
		if len(loose) > 0 {
			out.Missing = fmt.Sprintf("the judge's SCORE line %q is no rating the grader reads: want SCORE: n, or SCORE: n/%s, a number on the scale [%s, %s]",
				clipTo(loose[len(loose)-1][1], scoreQuoteCap), num(max), num(min), num(max))
		}
		return out
	}
	last := ms[len(ms)-1]
	v, err := strconv.ParseFloat(last[1], 64)
	// A fraction is a rating out of its denominator: "4/10" on [1, 5] is
	// not 4 of 5, and no rescaling is guessed, so only the scale's own
	// maximum as denominator is a rating on it.
	outOf, outOfErr := max, error(nil)
	if last[2] != "" {
		outOf, outOfErr = strconv.ParseFloat(last[2], 64)
	}
	switch {
	case err != nil:
		out.Missing = fmt.Sprintf("the judge's SCORE %q is not a number", last[1])
	case outOfErr != nil || outOf != max:
		out.Missing = fmt.Sprintf("the judge's SCORE %s/%s is out of %s, not on the scale [%s, %s]",
			last[1], last[2], last[2], num(min), num(max))
	case v < min || v > max:
		out.Missing = fmt.Sprintf("the judge's SCORE %s is outside the scale [%s, %s]", num(v), num(min), num(max))
	default:
		out.Values = []events.ScoreValue{{Name: "score", Value: v}}
	}
	return out
}
