package grade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/factline/factline/events"
)

// Bounds of a JSON score line: the values kept and the length of a name.
const (
	maxScoreValues  = 32
	maxScoreNameLen = 64
)

// ReadScoreLine finds a command's score in its output: the last line that
// is a JSON object with a "score" member, such as {"score": 0.94,
// "p50_ms": 120}. Its finite numeric members are the values (the first
// maxScoreValues by name; other members are ignored). The last score line
// is the command's answer: when its "score" is no finite number there is
// no value, and the reason quotes it; an earlier line is never taken in
// its place. Output without a score line yields no value and says so.
func ReadScoreLine(out []byte) events.InstrumentScore {
	res := events.InstrumentScore{Source: events.ScoreJSONLine}
	lines := bytes.Split(out, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		line := bytes.TrimSpace(lines[i])
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		unread := scoreMember(line)
		if unread == nil {
			continue // no JSON object with a "score": not a score line
		}
		if values, ok := scoreLine(line); ok {
			res.Values = values
			return res
		}
		// The score line the grader cannot use says what it holds, so
		// the one who reads the missing score knows what the command
		// printed.
		res.Missing = fmt.Sprintf(`the last score line's "score" is %s, not a finite number (earlier score lines are not read): %s`,
			clip(unread, 64), clip(line, 160))
		return res
	}
	res.Missing = `no score line: the output has no line that is a JSON object with a "score"`
	return res
}

// scoreMember is the raw "score" member of a JSON object line, or nil.
func scoreMember(line []byte) []byte {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return nil
	}
	raw, ok := obj["score"]
	if !ok {
		return nil
	}
	return bytes.TrimSpace(raw)
}

// scoreLine reads one candidate line.
func scoreLine(line []byte) ([]events.ScoreValue, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return nil, false
	}
	var values []events.ScoreValue
	for name, raw := range obj {
		if name == "" || len(name) > maxScoreNameLen || strings.ContainsRune(name, 0) {
			continue
		}
		// Only a JSON number: null would decode as 0.
		if len(raw) == 0 || !strings.ContainsRune("-0123456789", rune(raw[0])) {
			continue
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		values = append(values, events.ScoreValue{Name: name, Value: v})
	}
	slices.SortFunc(values, func(a, b events.ScoreValue) int { return strings.Compare(a.Name, b.Name) })
	if !slices.ContainsFunc(values, func(v events.ScoreValue) bool { return v.Name == "score" }) {
		return nil, false
	}
	if len(values) > maxScoreValues {
		// Keep "score" whatever its place in name order.
		kept := values[: maxScoreValues-1 : maxScoreValues-1]
		if !slices.ContainsFunc(kept, func(v events.ScoreValue) bool { return v.Name == "score" }) {
			v, _ := scoreValue(values)
			kept = append(kept, v)
			slices.SortFunc(kept, func(a, b events.ScoreValue) int { return strings.Compare(a.Name, b.Name) })
		} else {
			kept = values[:maxScoreValues]
		}
		values = kept
	}
	return values, true
}

func scoreValue(values []events.ScoreValue) (events.ScoreValue, bool) {
	for _, v := range values {
		if v.Name == "score" {
			return v, true
		}
	}
	return events.ScoreValue{}, false
}

// clip is b as text, cut at a rune boundary to at most n bytes with "…"
// after a cut: a score member may be any JSON value, however long.
func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + "…"
}
