package measure

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// WriteJSON writes EncodeJSON's bytes, a row at a time: for a report with
// rows of every shape the fixtures make (pass, fail, pending, unknown
// usage, HTML-escaped names), one row, no rows and nil rows.
func TestWriteJSONIsEncodeJSON(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"base<1>", "B&C"}, 2))
	for _, c := range []string{"c1", "c2"} {
		for trial := uint32(1); trial <= 2; trial++ {
			l.attempt(c, "base<1>", trial, events.RunDone, u64(10), pass)
			l.attempt(c, "B&C", trial, events.RunDone, nil, vr(events.VerdictWaiting("lint")))
		}
	}
	rich := l.report()
	one := rich
	one.Attempts = rich.Attempts[:1]
	empty := rich
	empty.Attempts = []AttemptRow{}
	none := rich
	none.Attempts = nil
	for name, r := range map[string]Report{"rich": rich, "one row": one, "no rows": empty, "nil rows": none,
		"1,000 runs": Build(foldDecoded(t, 100))} {
		want, err := EncodeJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := WriteJSON(&got, r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s: WriteJSON wrote %d bytes that are not EncodeJSON's %d:\n%s\nwant:\n%s", name, got.Len(), len(want), got.Bytes(), want)
		}
	}
}

// heapWatcher discards what it is written and records the live heap
// (after a collection) every so many writes: what the writer's caller
// holds while it writes.
type heapWatcher struct {
	writes, every int
	most          uint64
}

func (h *heapWatcher) Write(p []byte) (int, error) {
	h.writes++
	if h.writes%h.every == 0 {
		h.most = max(h.most, liveHeap())
	}
	return len(p), nil
}

// maxJSONHeldBytes bounds what writing a report's JSON holds beyond the
// report: a bufio buffer and one row's JSON, not the report's.
const maxJSONHeldBytes = 512 << 10

// Writing a report's JSON holds one row's at a time, not the whole: a
// 100,000-run report is ~50 MB of JSON, which MarshalIndent held twice,
// and the meter's store and the CLI's print of it held it again.
func TestWriteJSONHoldsOneRowAtATime(t *testing.T) {
	r := Build(foldDecoded(t, 300)) // 3,000 rows, ~2 MB of JSON
	base := liveHeap()
	w := &heapWatcher{every: 1}
	if err := WriteJSON(w, r); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(r)
	held := int64(w.most) - int64(base)
	t.Logf("writing %d rows held %d KiB beyond the report, over %d writes", len(r.Attempts), held>>10, w.writes)
	if held > maxJSONHeldBytes {
		t.Errorf("writing the report's JSON held %d KiB beyond the report, more than %d KiB", held>>10, maxJSONHeldBytes>>10)
	}
	if w.writes < 2 {
		t.Errorf("the report's JSON came in %d write: whole", w.writes)
	}
}

// ReadJSON decodes what json.Unmarshal decodes from a report's JSON, and
// what it decodes encodes back to the same bytes.
func TestReadJSONIsUnmarshal(t *testing.T) {
	for name, r := range map[string]Report{"1,000 runs": Build(foldDecoded(t, 100)), "no rows": {Suite: "s", Attempts: []AttemptRow{}},
		"nil rows": {Suite: "s"}} {
		data, err := EncodeJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, err := EncodeJSON(got)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, data) {
			t.Errorf("%s: read and encoded again, %d bytes, not the %d read", name, len(again), len(data))
		}
	}
}

// Bad report JSON is refused with an error that says where.
func TestReadJSONRefusesWhatIsNotAReport(t *testing.T) {
	for name, in := range map[string]string{
		"not an object":             `[1]`,
		"attempts not a list":       `{"suite":"s","attempts":5}`,
		"a row not an object":       `{"attempts":[1]}`,
		"cut short":                 `{"suite":"s","attempts":[{"run":"a"}`,
		"more after":                `{"suite":"s"} {}`,
		"a field of the wrong type": `{"trials":"x"}`,
	} {
		if _, err := ReadJSON(strings.NewReader(in)); err == nil {
			t.Errorf("%s: %s was read", name, in)
		} else if !strings.Contains(err.Error(), "decode the report") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzReadJSON: whatever ReadJSON reads, json.Unmarshal reads the same
// report from (both encode it to the same bytes).
func FuzzReadJSON(f *testing.F) {
	f.Add([]byte(`{"suite":"s","trials":2,"attempts":[{"run":"a","trial":1},{"run":"b"}]}`))
	f.Add([]byte(`{"Attempts":[{"run":"a"}],"attempts":null}`))
	f.Add([]byte(`{"attempts":[],"suite":"x","cases":["c1"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ReadJSON(bytes.NewReader(data))
		if err != nil {
			return
		}
		var want Report
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("ReadJSON read %q, json.Unmarshal refused it: %v", data, err)
		}
		a, errA := EncodeJSON(got)
		b, errB := EncodeJSON(want)
		if (errA == nil) != (errB == nil) || !bytes.Equal(a, b) {
			t.Fatalf("%q: ReadJSON's report encodes to\n%s\njson.Unmarshal's to\n%s", data, a, b)
		}
	})
}
