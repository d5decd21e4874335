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

// judgeScoreLine is a judge's rating: a line "SCORE: n" (or "SCORE: n/5");
// the last one counts.
var judgeScoreLine = regexp.MustCompile(`(?im)^[ \t]*SCORE:[ \t]*([-+]?[0-9]+(?:\.[0-9]+)?)[ \t]*(?:/[ \t]*[0-9]+(?:\.[0-9]+)?)?[ \t]*$`)

// judgeVerdictLine is the verdict line, left out of the reasons.
var judgeVerdictLine = regexp.MustCompile(`(?im)^[ \t]*VERDICT:.*$`)

// ReadJudgeScore reads a judge's rating on its declared scale [min, max]
// from its reply: the last "SCORE: n" line, with the rest of the reply
// (its reasons) kept. A reply without a rating, or with one outside the
// scale, yields no value and says why.
func ReadJudgeScore(reply string, min, max float64) events.InstrumentScore {
	out := events.InstrumentScore{Source: events.ScoreJudge}
	reasons := judgeScoreLine.ReplaceAllString(reply, "")
	reasons = strings.TrimSpace(judgeVerdictLine.ReplaceAllString(reasons, ""))
	out.Reasons = clipTo(reasons, reasonsCap)
	ms := judgeScoreLine.FindAllStringSubmatch(reply, -1)
	if len(ms) == 0 {
		out.Missing = "the judge gave no SCORE line"
		return out
	}
	v, err := strconv.ParseFloat(ms[len(ms)-1][1], 64)
	switch {
	case err != nil:
		out.Missing = fmt.Sprintf("the judge's SCORE %q is not a number", ms[len(ms)-1][1])
	case v < min || v > max:
		out.Missing = fmt.Sprintf("the judge's SCORE %s is outside the scale [%s, %s]", num(v), num(min), num(max))
	default:
		out.Values = []events.ScoreValue{{Name: "score", Value: v}}
	}
	return out
}
