// Package measure is the meter stick's pure core: it expands a submitted
// suite into its roster of attempts, folds a suite's facts into the state a
// report needs (a projection registered as "suites", so anyone can rebuild
// a report from the log), computes the report and the comparisons between
// treatments, and renders them as a table, JSON, CSV and an SVG chart. It
// does no I/O beyond writing to the io.Writer it is given, and imports no
// NATS; the statistics come from package stats.
package measure

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/factline/factline/events"
)

// Member is one planned attempt of a suite: a case under a treatment, trial
// n, and the run ID it runs as.
type Member struct {
	Case      string `json:"case"`
	Treatment string `json:"treatment"`
	Trial     uint32 `json:"trial"`
	Run       string `json:"run"`
}

// maxRunID bounds a run ID (a subject token holds at most 128 bytes).
const maxRunID = 128

// Roster expands a submitted suite into its planned attempts, trial by
// trial, case by case, treatment by treatment: the order runs are
// requested in, which interleaves treatments so that a drift over time (a
// slower provider, a busier machine) hits them alike. Run IDs are
// "<case>-<treatment>-t<trial>", made a valid run token; where two members
// would share one, or one would be too long, a short hash of the member
// keeps it unique. The same suite always gives the same roster. Roster
// holds every member; Members streams them.
func Roster(s events.SuiteSubmitted) []Member {
	out := make([]Member, 0, min(Size(s), 1<<20))
	for m := range Members(s) {
		out = append(out, m)
	}
	return out
}

// Size is the number of planned attempts: cases × treatments × trials.
func Size(s events.SuiteSubmitted) uint64 {
	return uint64(len(s.Cases)) * uint64(len(s.Treatments)) * uint64(s.Trials)
}

// Members yields the roster's members in Roster's order, with the same run
// IDs, holding only one entry per case and treatment pair, never one per
// attempt: what the meter requests and the submitter counts costs memory
// in the suite's cases × treatments, not in its runs.
//
// Two members share a base run ID only when they share the trial and the
// "<case>-<treatment>" part (the ID ends in "-t<digits>", so its last "-t"
// fixes both), so collisions are found among the pairs once, not among
// the runs.
func Members(s events.SuiteSubmitted) iter.Seq[Member] {
	return func(yield func(Member) bool) {
		prefix := make([]string, 0, len(s.Cases)*len(s.Treatments))
		shared := map[string]int{}
		for _, c := range s.Cases {
			for _, t := range s.Treatments {
				p := basePrefix(c.ID, t.ID)
				prefix = append(prefix, p)
				shared[p]++
			}
		}
		for trial := uint32(1); trial <= s.Trials; trial++ {
			i := 0
			for _, c := range s.Cases {
				for _, t := range s.Treatments {
					p := prefix[i]
					i++
					m := Member{Case: c.ID, Treatment: t.ID, Trial: trial, Run: p + "-t" + strconv.FormatUint(uint64(trial), 10)}
					if shared[p] > 1 || len(m.Run) > maxRunID {
						sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d", m.Case, m.Treatment, m.Trial)))
						m.Run = m.Run[:min(len(m.Run), maxRunID-9)] + "-" + hex.EncodeToString(sum[:4])
					}
					if !yield(m) {
						return
					}
				}
			}
			if trial == ^uint32(0) {
				return // trial++ would wrap to 0 and start over
			}
		}
	}
}

// basePrefix is the "<case>-<treatment>" part of a base run ID, made a run
// token's start as baseRunID makes the whole.
func basePrefix(caseID, treatment string) string {
	p := strings.Map(tokenRune, caseID+"-"+treatment)
	if strings.HasPrefix(p, "_") {
		p = "r" + p
	}
	return p
}

func tokenRune(r rune) rune {
	if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
		return r
	}
	return '_'
}

// baseRunID is "<case>-<treatment>-t<trial>" with every byte a run token
// does not allow replaced by '_' and a leading '_' (reserved) made "r_".
func baseRunID(caseID, treatment string, trial uint32) string {
	return basePrefix(caseID, treatment) + "-t" + strconv.FormatUint(uint64(trial), 10)
}

// RequestMsgID is the message ID of a member's run.requested.
func RequestMsgID(run string) string { return events.MessageID(run, events.KindRunRequested) }

// ReportMsgID is the message ID of a suite.reported for a report digest: a
// suite whose report changes after it was first reported (a re-grade)
// reports again, once per distinct report.
func ReportMsgID(report events.Digest) string {
	return events.MessageID(events.SuiteScope, events.KindSuiteReported, report.Hex()[:12])
}
