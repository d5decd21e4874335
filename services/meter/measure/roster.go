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
// keeps it unique. The same suite always gives the same roster.
func Roster(s events.SuiteSubmitted) []Member {
	var out []Member
	for trial := uint32(1); trial <= s.Trials; trial++ {
		for _, c := range s.Cases {
			for _, t := range s.Treatments {
				out = append(out, Member{Case: c.ID, Treatment: t.ID, Trial: trial, Run: baseRunID(c.ID, t.ID, trial)})
			}
		}
	}
	seen := map[string]int{}
	for _, m := range out {
		seen[m.Run]++
	}
	for i, m := range out {
		if seen[m.Run] > 1 || len(m.Run) > maxRunID {
			sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d", m.Case, m.Treatment, m.Trial)))
			base := m.Run[:min(len(m.Run), maxRunID-9)]
			out[i].Run = base + "-" + hex.EncodeToString(sum[:4])
		}
	}
	return out
}

// baseRunID is "<case>-<treatment>-t<trial>" with every byte a run token
// does not allow replaced by '_' and a leading '_' (reserved) made "r_".
func baseRunID(caseID, treatment string, trial uint32) string {
	id := fmt.Sprintf("%s-%s-t%d", caseID, treatment, trial)
	id = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, id)
	if strings.HasPrefix(id, "_") {
		id = "r" + id
	}
	return id
}

// RequestMsgID is the message ID of a member's run.requested.
func RequestMsgID(run string) string { return run + "/requested" }

// ReportMsgID is the message ID of a suite.reported for a report digest: a
// suite whose report changes after it was first reported (a re-grade)
// reports again, once per distinct report.
func ReportMsgID(report events.Digest) string {
	return events.SuiteScope + "/reported/" + report.Hex()[:12]
}
