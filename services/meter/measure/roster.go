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
		x := newRosterIndex(s)
		for trial := uint32(1); trial <= s.Trials; trial++ {
			for pair := range x.prefix {
				if !yield(x.member(pair, trial)) {
					return
				}
			}
			if trial == ^uint32(0) {
				return // trial++ would wrap to 0 and start over
			}
		}
	}
}

// rosterIndex names a suite's members without listing them: member i of
// the roster (in Members' order) is trial i/pairs+1 of case × treatment
// pair i%pairs.
type rosterIndex struct {
	s      events.SuiteSubmitted
	prefix []string // by pair (case-major): the "<case>-<treatment>" part of its run IDs
	shared []bool   // by pair: another pair has the same prefix
	// byPrefix lists the pairs of each prefix, for naming a run's member
	// from its ID (only where asked: Members never needs it).
	byPrefix map[string][]int
}

func newRosterIndex(s events.SuiteSubmitted) rosterIndex {
	x := rosterIndex{s: s, prefix: make([]string, 0, len(s.Cases)*len(s.Treatments))}
	count := map[string]int{}
	for _, c := range s.Cases {
		for _, t := range s.Treatments {
			p := basePrefix(c.ID, t.ID)
			x.prefix = append(x.prefix, p)
			count[p]++
		}
	}
	x.shared = make([]bool, len(x.prefix))
	for i, p := range x.prefix {
		x.shared[i] = count[p] > 1
	}
	return x
}

// members returns the roster indexes (trial-1)*pairs+pair of the members
// whose run ID is run, read off the ID: "<prefix>-t<trial>", or that with
// "-<8 hex digits>" after it where prefixes collide. An ID shortened to
// fit a run token names no trial and gives none.
func (x *rosterIndex) members(run string) []int {
	if x.byPrefix == nil {
		x.byPrefix = map[string][]int{}
		for i, p := range x.prefix {
			x.byPrefix[p] = append(x.byPrefix[p], i)
		}
	}
	base := run
	if i := len(run) - 9; i > 0 && run[i] == '-' && isHex(run[i+1:]) {
		base = run[:i]
	}
	cut := strings.LastIndex(base, "-t")
	if cut < 0 {
		return nil
	}
	trial, err := strconv.ParseUint(base[cut+2:], 10, 32)
	if err != nil || trial < 1 || trial > uint64(x.s.Trials) {
		return nil
	}
	var out []int
	for _, pair := range x.byPrefix[base[:cut]] {
		if x.member(pair, uint32(trial)).Run == run {
			out = append(out, int(trial-1)*len(x.prefix)+pair)
		}
	}
	return out
}

func isHex(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// member is trial of the case × treatment pair, with its run ID.
func (x rosterIndex) member(pair int, trial uint32) Member {
	nt := len(x.s.Treatments)
	c, t := x.s.Cases[pair/nt], x.s.Treatments[pair%nt]
	m := Member{Case: c.ID, Treatment: t.ID, Trial: trial, Run: x.prefix[pair] + "-t" + strconv.FormatUint(uint64(trial), 10)}
	if x.shared[pair] || len(m.Run) > maxRunID {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d", m.Case, m.Treatment, m.Trial)))
		m.Run = m.Run[:min(len(m.Run), maxRunID-9)] + "-" + hex.EncodeToString(sum[:4])
	}
	return m
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
