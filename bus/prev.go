package bus

import (
	"strconv"
	"strings"
)

// Every fact carries, in the header HeaderPrev, the stream sequences of the
// run's previous messages (up to prevDepth of them, newest first). A reader
// that knows the run's last message can then fetch the whole run by
// sequence, many requests at a time, instead of asking the server to scan
// the stream for the run's subjects: the cost follows the run's length, not
// how many other runs' facts lie in between.
//
// The value is a comma-separated list of decimals: the previous message's
// sequence, then each older one as the difference to the one before it
// (deltas are small because a run's facts are close together). A run's
// first fact has no header.
const HeaderPrev = "Factline-Prev"

// prevDepth is how many links a fact carries. Eight, not more: a cold load
// of a 420-fact run took as long with 8 as with 32 (the messages' transfer,
// not the round trips, is its cost; BenchmarkLoadRunLinks), and each link
// costs about three bytes of every fact. A variable only so that the
// benchmark can weigh the two.
var prevDepth = 8

// Expect is what a writer believes about a run's tail: its last stream
// sequence and the sequences before it (newest first). Build it from a
// loaded run with RunLog.Expect, or from a bare sequence with ExpectLast.
type Expect struct {
	Last uint64
	prev []uint64 // newest first, prev[0] == Last when Last > 0
}

// ExpectLast is an expectation from the last sequence alone. Facts appended
// with it link only to that one message; loading still works, it just takes
// more round trips.
func ExpectLast(seq uint64) Expect {
	if seq == 0 {
		return Expect{}
	}
	return Expect{Last: seq, prev: []uint64{seq}}
}

// Then returns the expectation after a message of the run landed at seq.
func (e Expect) Then(seq uint64) Expect { return e.then(seq) }

func (e Expect) then(seq uint64) Expect {
	prev := make([]uint64, 0, prevDepth)
	prev = append(prev, seq)
	prev = append(prev, e.prev[:min(len(e.prev), prevDepth-1)]...)
	return Expect{Last: seq, prev: prev}
}

// Header is the HeaderPrev value a fact appended under this expectation
// carries ("" for a run's first fact).
func (e Expect) Header() string { return e.header() }

func (e Expect) header() string {
	if len(e.prev) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString(strconv.FormatUint(e.prev[0], 10))
	for i := 1; i < len(e.prev); i++ {
		sb.WriteByte(',')
		sb.WriteString(strconv.FormatUint(e.prev[i-1]-e.prev[i], 10))
	}
	return sb.String()
}

// parsePrev decodes a HeaderPrev value of the message stored at self into
// sequences, newest first. It reports false for a malformed value.
func parsePrev(v string, self uint64) ([]uint64, bool) {
	if v == "" {
		return nil, true
	}
	v, relative := strings.CutPrefix(v, relativeMark)
	parts := strings.Split(v, ",")
	out := make([]uint64, 0, len(parts))
	var cur uint64
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return nil, false
		}
		switch {
		case i == 0 && relative:
			if n == 0 || n >= self {
				return nil, false
			}
			cur = self - n
		case i == 0:
			cur = n
		default:
			if n == 0 || n >= cur {
				return nil, false
			}
			cur -= n
		}
		out = append(out, cur)
	}
	return out, true
}

// relativeMark starts a HeaderPrev value whose first number is a distance
// back from the message's own stream sequence rather than a sequence: a
// member of an atomic batch after the first (AppendBatch) links to the
// members before it, whose sequences are not known when it is sent but
// sit right below its own.
const relativeMark = "~"

// inBatchLinks is the HeaderPrev value of the i-th member (i > 0) of an
// atomic batch: the members before it, newest first ("~1,1" for the
// third). The first member links to the run's messages before the batch.
func inBatchLinks(i int) string {
	var sb strings.Builder
	sb.WriteString(relativeMark + "1")
	for range min(i, prevDepth) - 1 {
		sb.WriteString(",1")
	}
	return sb.String()
}
