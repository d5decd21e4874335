package fleet

import (
	"slices"
	"testing"

	"github.com/factline/factline/cases"
)

// A regrade file's scorers replace the case's scorers of the same ID, as
// its instruments do, so a regrade can rescore on a new scale; a scorer
// the case never had is not added, and the case's grading is not changed
// in place.
func TestARegradeFilesScorersReplaceTheCasesOfTheSameID(t *testing.T) {
	own := &cases.Grading{
		Instruments: []cases.Instrument{{ID: "tests", Kind: cases.InstrumentCommand, Command: "x"}},
		Scorers:     []cases.Scorer{{ID: "correctness", Instrument: "tests", Key: "score", Scale: []float64{0, 1}}},
	}
	with := cases.Grading{Scorers: []cases.Scorer{
		{ID: "correctness", Instrument: "tests", Key: "score", Scale: []float64{0, 100}},
		{ID: "speed", Instrument: "tests"},
	}}
	out, touched := merged(own, with, nil)
	if !touched || len(out.Scorers) != 1 || !slices.Equal(out.Scorers[0].Scale, []float64{0, 100}) {
		t.Fatalf("merged %+v, touched %v", out.Scorers, touched)
	}
	if !slices.Equal(own.Scorers[0].Scale, []float64{0, 1}) {
		t.Fatalf("the case's own scorer changed: %+v", own.Scorers)
	}
	if _, touched := merged(own, cases.Grading{Scorers: []cases.Scorer{{ID: "speed", Instrument: "tests"}}}, nil); touched {
		t.Fatal("a scorer the case never had touched it")
	}
}

// regrade --instrument ID takes from the file only what grades those
// instruments: its scorers of other instruments are left out, as its other
// instruments are, so the case keeps its own.
func TestARegradeOfNamedInstrumentsTakesOnlyTheirScorersFromTheFile(t *testing.T) {
	own := &cases.Grading{
		Instruments: []cases.Instrument{
			{ID: "tests", Kind: cases.InstrumentCommand, Command: "x"},
			{ID: "bench", Kind: cases.InstrumentCommand, Command: "y"},
		},
		Scorers: []cases.Scorer{
			{ID: "correctness", Instrument: "tests", Key: "score", Scale: []float64{0, 1}},
			{ID: "latency", Instrument: "bench", Key: "p50_ms", Scale: []float64{0, 1000}},
		},
	}
	with := cases.Grading{Scorers: []cases.Scorer{
		{ID: "correctness", Instrument: "tests", Key: "score", Scale: []float64{0, 100}},
		{ID: "latency", Instrument: "bench", Key: "p50_ms", Scale: []float64{0, 5000}},
	}}
	out, touched := merged(own, with, []string{"tests"})
	if !touched || !slices.Equal(out.Scorers[0].Scale, []float64{0, 100}) {
		t.Fatalf("the named instrument's scorer was not taken: %+v, touched %v", out.Scorers, touched)
	}
	if !slices.Equal(out.Scorers[1].Scale, []float64{0, 1000}) {
		t.Fatalf("a scorer of an instrument not named was taken from the file: %+v", out.Scorers[1])
	}
	onlyBench := cases.Grading{Scorers: with.Scorers[:1]}
	if _, touched := merged(own, onlyBench, []string{"bench"}); touched {
		t.Fatal("a file whose only scorer reads an instrument not named touched the case")
	}
}

// An instrument of a regrade file under its case's own version is a
// redefinition when any field differs (the grader would reuse that
// version's result and never run it), and none when it is the case's as it
// is, values compared as JSON (4 from YAML equals 4.0 from a stored case);
// another version, an instrument the case lacks, or one left out by
// --instrument is no redefinition.
func TestARegradeFileRedefiningAnInstrumentUnderItsVersionIsFound(t *testing.T) {
	yes := true
	own := &cases.Grading{Instruments: []cases.Instrument{
		{ID: "tests", Kind: cases.InstrumentCommand, Version: "1", Command: "./test.sh"},
		{ID: "answer", Kind: cases.InstrumentFile, Version: "1", Path: "out.json", JSONPath: "$.a", Equals: 4.0},
	}}
	for _, c := range []struct {
		in     cases.Instrument
		only   []string
		fields []string
	}{
		{in: cases.Instrument{ID: "tests", Kind: cases.InstrumentCommand, Version: "1", Command: "false"}, fields: []string{"command"}},
		{in: cases.Instrument{ID: "tests", Kind: cases.InstrumentCommand, Version: "1", Command: "./test.sh", Required: &yes}, fields: []string{"required"}},
		{in: cases.Instrument{ID: "tests", Kind: cases.InstrumentCommand, Version: "1", Command: "./test.sh"}},
		{in: cases.Instrument{ID: "answer", Kind: cases.InstrumentFile, Version: "1", Path: "out.json", JSONPath: "$.a", Equals: 4}},
		{in: cases.Instrument{ID: "tests", Kind: cases.InstrumentCommand, Version: "2", Command: "false"}},
		{in: cases.Instrument{ID: "other", Kind: cases.InstrumentCommand, Version: "1", Command: "false"}},
		{in: cases.Instrument{ID: "tests", Kind: cases.InstrumentCommand, Version: "1", Command: "false"}, only: []string{"answer"}},
	} {
		err := redefined(own, cases.Grading{Instruments: []cases.Instrument{c.in}}, c.only)
		switch {
		case c.fields == nil && err != nil:
			t.Errorf("%+v (only %v): %v, want no redefinition", c.in, c.only, err)
		case c.fields != nil && (err == nil || !slices.Equal(err.Fields, c.fields) || err.Instrument != c.in.ID || err.Version != "1"):
			t.Errorf("%+v: %+v, want a redefinition of %v", c.in, err, c.fields)
		}
	}
}
