package measure

import (
	"fmt"

	"github.com/factline/factline/events"
)

// RetryRunID names the n-th run (n ≥ 2) of the planned attempt whose first
// run is first: "<first>-retry<n>". A member's run ID ends in "-t<trial>",
// so a retry's never equals one. An ID that would pass a run token's 128
// bytes keeps the start of first and a digest of the whole of it.
func RetryRunID(first string, n int) string {
	suffix := fmt.Sprintf("-retry%d", n)
	id := first + suffix
	if len(id) <= 128 {
		return id
	}
	d := string(events.DigestOf([]byte(first)))
	tag := "-" + d[len(d)-12:]
	return first[:128-len(suffix)-len(tag)] + tag + suffix
}

// Retry is a run to request again: the planned attempt's newest run ended
// as a harness error.
type Retry struct {
	Member  Member
	Of      string // the newest run, which the retry replaces
	Run     string // the retry's run ID
	Request events.RunRequested
}

// Retries lists, for the suite's planned attempts whose newest run ended
// errored (a harness error, never a result of the agent), the run that
// retries it. only, when not empty, keeps the attempts any of whose runs
// it names.
func Retries(l *Log, only []string) []Retry {
	if l.Submitted == nil {
		return nil
	}
	var out []Retry
	for m := range Members(*l.Submitted) {
		chain := []string{m.Run}
		for next, ok := l.RetriedBy[chain[len(chain)-1]]; ok && len(chain) < 1000; next, ok = l.RetriedBy[chain[len(chain)-1]] {
			chain = append(chain, next)
		}
		newest := chain[len(chain)-1]
		a := l.Runs[newest]
		if a == nil {
			continue
		}
		e, ended := a.Ended()
		req, requested := a.Request()
		if !ended || e.Status != events.RunErrored || !requested {
			continue
		}
		if len(only) > 0 && !anyOf(chain, only) {
			continue
		}
		req.RetryOf = newest
		out = append(out, Retry{Member: m, Of: newest, Run: RetryRunID(m.Run, len(chain)+1), Request: req})
	}
	return out
}

// UnknownRun returns the first of ids that is no run of the suite l
// holds: neither a planned attempt's run nor one the log holds facts of
// (a retry).
func UnknownRun(l *Log, ids []string) (string, bool) {
	if l.Submitted == nil || len(ids) == 0 {
		return "", false
	}
	planned := map[string]bool{}
	for m := range Members(*l.Submitted) {
		planned[m.Run] = true
	}
	for _, id := range ids {
		if !planned[id] && l.Runs[id] == nil {
			return id, true
		}
	}
	return "", false
}

func anyOf(chain, names []string) bool {
	for _, c := range chain {
		for _, n := range names {
			if c == n {
				return true
			}
		}
	}
	return false
}
