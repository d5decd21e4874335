package measure

import (
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"slices"
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
		// The digest ReadJSONKeeping hashes as the rows pass is the
		// data's exactly when the report read encodes back to the data.
		kept, d, err := ReadJSONKeeping(bytes.NewReader(data), KeptForTheTable)
		if err != nil {
			t.Fatalf("%q: ReadJSON read it, ReadJSONKeeping refused it: %v", data, err)
		}
		if canonical := errA == nil && bytes.Equal(a, data); (d == events.DigestOf(data)) != canonical {
			t.Fatalf("%q: ReadJSONKeeping's digest %s; the data encodes back to itself: %v", data, d, canonical)
		}
		if len(kept.Attempts) > len(got.Attempts) {
			t.Fatalf("%q: kept %d rows of %d", data, len(kept.Attempts), len(got.Attempts))
		}
	})
}

// tableReport is a report with every kind of row the table names (harness
// errors, excluded attempts) among passing and failing ones.
func tableReport(t *testing.T) Report {
	t.Helper()
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"a", "b"}, 3))
	for _, c := range []string{"c1", "c2"} {
		l.attempt(c, "a", 1, events.RunDone, u64(10), pass)
		l.attempt(c, "a", 2, events.RunErrored, u64(3), nil)
		l.attempt(c, "a", 3, events.RunCancelled, nil, nil)
		l.attempt(c, "b", 1, events.RunDone, u64(12), fail)
		l.attempt(c, "b", 2, events.RunDone, nil, pass)
		l.attempt(c, "b", 3, events.RunErrored, nil, nil)
	}
	return l.report()
}

// ReadJSONKeeping reads the report ReadJSON reads, holding only the rows
// kept, and the digest it returns is the one of the JSON the whole report
// encodes to: the blob's name when the blob is WriteJSON's, never when it
// is not.
func TestReadJSONKeepingHashesTheReportItReads(t *testing.T) {
	rich := tableReport(t)
	empty := rich
	empty.Attempts = []AttemptRow{}
	none := rich
	none.Attempts = nil
	for name, r := range map[string]Report{"rows of every kind": rich, "no rows": empty, "nil rows": none,
		"1,000 runs": Build(foldDecoded(t, 100))} {
		data, err := EncodeJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		all, err := ReadJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		for keepName, keep := range map[string]func(*AttemptRow) bool{"every row": nil, "the table's": KeptForTheTable} {
			got, d, err := ReadJSONKeeping(bytes.NewReader(data), keep)
			if err != nil {
				t.Fatalf("%s, %s: %v", name, keepName, err)
			}
			if d != events.DigestOf(data) {
				t.Errorf("%s, %s: digest %s, the JSON's is %s", name, keepName, d, events.DigestOf(data))
			}
			want := all
			if keep != nil && all.Attempts != nil {
				want.Attempts = []AttemptRow{}
				for _, a := range all.Attempts {
					if keep(&a) {
						want.Attempts = append(want.Attempts, a)
					}
				}
			}
			a, _ := EncodeJSON(got)
			b, _ := EncodeJSON(want)
			if !bytes.Equal(a, b) {
				t.Errorf("%s, %s: read\n%s\nwant\n%s", name, keepName, a, b)
			}
		}
	}
	data, err := EncodeJSON(rich)
	if err != nil {
		t.Fatal(err)
	}
	compact, err := json.Marshal(rich)
	if err != nil {
		t.Fatal(err)
	}
	last := bytes.LastIndexByte(data, '}')
	for name, other := range map[string][]byte{
		"compact":              compact,
		"a field after":        append(append(slices.Clone(data[:last]), []byte(`,"suite":"s"`)...), data[last:]...),
		"attempts twice":       append(append(slices.Clone(data[:last]), []byte(`,"attempts":[]`)...), data[last:]...),
		"a row's fields moved": bytes.Replace(data, []byte(`"run": "c1-a-t1",`+"\n      "+`"case": "c1",`), []byte(`"case": "c1",`+"\n      "+`"run": "c1-a-t1",`), 1),
	} {
		if bytes.Equal(other, data) {
			t.Fatalf("%s: the JSON is WriteJSON's", name)
		}
		_, d, err := ReadJSONKeeping(bytes.NewReader(other), KeptForTheTable)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d == events.DigestOf(other) {
			t.Errorf("%s: JSON not WriteJSON's has the digest of its own bytes", name)
		}
	}
}

// The table of a report read keeping only the rows the table names is
// the table of the whole report, its reasons included.
func TestTheTableNeedsOnlyTheRowsItNames(t *testing.T) {
	r := tableReport(t)
	data, err := EncodeJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	kept, _, err := ReadJSONKeeping(bytes.NewReader(data), KeptForTheTable)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept.Attempts) == 0 || len(kept.Attempts) >= len(r.Attempts) {
		t.Fatalf("kept %d rows of %d", len(kept.Attempts), len(r.Attempts))
	}
	var want, got bytes.Buffer
	if err := WriteTable(&want, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteTable(&got, kept); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("the table from the rows kept:\n%s\nfrom every row:\n%s", got.String(), want.String())
	}
	if a, b := Whys(kept), Whys(r); !slices.Equal(a, b) || len(b) == 0 {
		t.Errorf("whys from the rows kept %v, from every row %v", a, b)
	}
}

// maxKeptHeldBytes bounds what a report read keeping none of its rows
// holds beyond its figures: none of its 3,000 rows (ReadJSON holds ~1.5
// MB of them).
const maxKeptHeldBytes = 128 << 10

// Reading a report keeping the table's rows holds its figures, not a row
// for every attempt: what 'factline run' holds of a large suite's report
// when it prints only the table.
func TestReadJSONKeepingHoldsOnlyTheRowsKept(t *testing.T) {
	data, err := EncodeJSON(Build(foldDecoded(t, 300))) // 3,000 rows, all passed
	if err != nil {
		t.Fatal(err)
	}
	held := func(read func() any) int64 {
		base := liveHeap()
		r := read()
		n := int64(liveHeap()) - int64(base)
		runtime.KeepAlive(r)
		return n
	}
	kept := held(func() any {
		r, _, err := ReadJSONKeeping(bytes.NewReader(data), KeptForTheTable)
		if err != nil {
			t.Fatal(err)
		}
		return r
	})
	whole := held(func() any {
		r, err := ReadJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		return r
	})
	runtime.KeepAlive(data)
	t.Logf("a 3,000-row report read whole holds %d KiB, keeping the table's rows %d KiB", whole>>10, kept>>10)
	if whole <= maxKeptHeldBytes {
		t.Fatalf("the whole report held %d KiB, within the bound meant for none of its rows", whole>>10)
	}
	if kept > maxKeptHeldBytes {
		t.Errorf("keeping the table's rows held %d KiB, more than %d KiB", kept>>10, maxKeptHeldBytes>>10)
	}
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Writing a report's JSON, and hashing it as ReadJSONKeeping reads it,
// reuse their buffers from row to row: a new pair a row (~1.3 KB) was
// garbage made as fast as the rows were written, three times at a
// suite's end (the meter's digest and store, the CLI's check), which the
// collector's headroom turned into resident memory.
func TestWritingTheJSONMakesLittleGarbageARow(t *testing.T) {
	r := Build(foldDecoded(t, 300)) // 3,000 rows
	data, err := EncodeJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	rows := uint64(len(r.Attempts))
	write := allocated(func() {
		if err := WriteJSON(io.Discard, r); err != nil {
			t.Fatal(err)
		}
	}) / rows
	// Reading allocates the rows it decodes; what hashing them adds is
	// the difference from ReadJSON.
	read := allocated(func() {
		if _, err := ReadJSON(bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	})
	hashed := allocated(func() {
		if _, _, err := ReadJSONKeeping(bytes.NewReader(data), nil); err != nil {
			t.Fatal(err)
		}
	})
	hash := (int64(hashed) - int64(read)) / int64(rows)
	// What a row's own pair of buffers costs here (more under -race,
	// whose pools keep fewer of what they are given).
	own := allocated(func() {
		for i := range r.Attempts {
			if _, err := json.MarshalIndent(&r.Attempts[i], rowPrefix, "  "); err != nil {
				t.Fatal(err)
			}
		}
	}) / rows
	t.Logf("a row written allocates %d bytes; hashed as it is read, %d more; a row's own buffers %d", write, hash, own)
	// ~60 bytes a row written and ~70 hashed, against ~1,060 for a row's
	// own buffers (~600-670 and ~1,620 under -race); ~1,120 each before.
	most := own / 2
	if write > most {
		t.Errorf("writing the JSON allocated %d bytes a row, more than %d (half of a row's own buffers)", write, most)
	}
	if hash > int64(most) {
		t.Errorf("hashing the JSON as it is read allocated %d bytes a row, more than %d (half of a row's own buffers)", hash, most)
	}
}
