package cases

import (
	"errors"
	"reflect"
	"testing"
)

const scoredCase = `id: s
instruction: x
grading:
  instruments:
    - {id: tests, kind: command, command: go test ./..., score: {format: junit, file: report.xml}}
    - {id: bench, kind: command, command: ./bench.sh, score: {format: json_line}}
    - {id: scope, kind: scope, allow: [src]}
    - id: review
      kind: judge
      model: {provider: scripted, name: judge-1}
      script: "turns:\n  - text: 'SCORE: 4\n\nVERDICT: PASS'\n"
      rubric: the fix is explained
      scale: [1, 5]
  scorers:
    - {id: correctness, instrument: tests, decides: true, pass_at: 0.9}
    - {id: latency, instrument: bench, key: p50_ms, scale: [0, 1000], higher_is_better: false}
    - {id: in_scope, instrument: scope}
    - {id: quality, instrument: review}
`

// A case's scorers take their defaults from what their instrument yields:
// the key "score" of an instrument with a score, its outcome otherwise; a
// judge's scale or [0, 1]; higher is better.
func TestScorersDefaultFromTheirInstrument(t *testing.T) {
	c, err := ParseCase("s.yaml", []byte(scoredCase))
	if err != nil {
		t.Fatal(err)
	}
	g := c.Grading
	want := []struct {
		key      string
		scale    []float64
		higher   bool
		deciding bool
	}{
		{"score", []float64{0, 1}, true, true},
		{"p50_ms", []float64{0, 1000}, false, false},
		{"", []float64{0, 1}, true, false},
		{"score", []float64{1, 5}, true, false},
	}
	for i, w := range want {
		s := g.Scorers[i]
		if s.Key != w.key || !reflect.DeepEqual(s.Scale, w.scale) || s.Higher() != w.higher || s.Decides != w.deciding {
			t.Errorf("scorer %s: key %q scale %v higher %v decides %v; want %+v", s.ID, s.Key, s.Scale, s.Higher(), s.Decides, w)
		}
	}
	if d, ok := g.Deciding("tests"); !ok || d.ID != "correctness" {
		t.Errorf("the deciding scorer of tests: %+v, %v", d, ok)
	}
	if _, ok := g.Deciding("review"); ok {
		t.Error("review has no deciding scorer")
	}
	data, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeCase(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Grading.Scorers, g.Scorers) || !reflect.DeepEqual(back.Grading.Instruments[0].Score, g.Instruments[0].Score) {
		t.Fatalf("stored scorers round trip: %+v", back.Grading)
	}
}

// A bad scorer or score declaration is refused when the case loads, with
// an error naming the file, the line and the field.
func TestBadScorersAreNamedByFileLineAndField(t *testing.T) {
	head := "id: a\ninstruction: x\ngrading:\n  instruments:\n" +
		"    - {id: tests, kind: command, command: x, score: {format: json_line}}\n" +
		"    - {id: plain, kind: command, command: y}\n" +
		"    - {id: review, kind: judge, model: {provider: scripted, name: j}, script: \"turns:\\n  - text: ok\\n\", rubric: r, scale: [1, 5]}\n" +
		"  scorers:\n" +
		"    - {id: ok, instrument: tests}\n"
	for _, c := range []struct {
		name, yaml, field string
		line              int
	}{
		{"no id", "    - {instrument: tests}\n", "grading.scorers[1].id", 10},
		{"duplicate id", "    - {id: ok, instrument: tests}\n", "grading.scorers[1].id", 10},
		{"no instrument", "    - {id: s}\n", "grading.scorers[1].instrument", 10},
		{"unknown instrument", "    - {id: s, instrument: nope}\n", "grading.scorers[1].instrument", 10},
		{"key of an instrument without a score", "    - {id: s, instrument: plain, key: score}\n", "grading.scorers[1].key", 10},
		{"key a judge does not yield", "    - {id: s, instrument: review, key: bleu}\n", "grading.scorers[1].key", 10},
		{"bad key", "    - {id: s, instrument: tests, key: 'a b'}\n", "grading.scorers[1].key", 10},
		{"empty scale", "    - {id: s, instrument: tests, scale: [1, 1]}\n", "grading.scorers[1].scale", 10},
		{"scale of three", "    - {id: s, instrument: tests, scale: [0, 1, 2]}\n", "grading.scorers[1].scale", 10},
		{"outcome off [0, 1]", "    - {id: s, instrument: plain, scale: [0, 5]}\n", "grading.scorers[1].scale", 10},
		{"decides without pass_at", "    - {id: s, instrument: tests, decides: true}\n", "grading.scorers[1].pass_at", 10},
		{"pass_at without decides", "    - {id: s, instrument: tests, pass_at: 0.5}\n", "grading.scorers[1].pass_at", 10},
		{"pass_at off the scale", "    - {id: s, instrument: review, decides: true, pass_at: 6}\n", "grading.scorers[1].pass_at", 10},
		{"outcome decides", "    - {id: s, instrument: plain, decides: true, pass_at: 1}\n", "grading.scorers[1].decides", 10},
		{"two decide", "    - {id: s, instrument: tests, decides: true, pass_at: 0.5}\n    - {id: u, instrument: review, decides: true, pass_at: 3}\n", "grading.scorers[2].decides", 11},
		{"unknown field", "    - {id: s, instrument: tests, weight: 2}\n", "grading.scorers[1].weight", 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseCase("bad.yaml", []byte(head+c.yaml))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a case error", err)
			}
			if ce.File != "bad.yaml" || ce.Line != c.line || ce.Field != c.field {
				t.Fatalf("got %q (line %d, field %q), want bad.yaml line %d field %s", err, ce.Line, ce.Field, c.line, c.field)
			}
		})
	}
}

// An instrument's score declaration belongs to its kind and is checked
// where it is written.
func TestBadScoreDeclarationsAreNamedByFileLineAndField(t *testing.T) {
	head := "id: a\ninstruction: x\ngrading:\n  instruments:\n"
	for _, c := range []struct{ name, yaml, field string }{
		{"junit without file", "    - {id: t, kind: command, command: x, score: {format: junit}}\n", "grading.instruments[0].score.file"},
		{"unknown format", "    - {id: t, kind: command, command: x, score: {format: tap}}\n", "grading.instruments[0].score.format"},
		{"no format", "    - {id: t, kind: command, command: x, score: {file: a}}\n", "grading.instruments[0].score.format"},
		{"file outside", "    - {id: t, kind: command, command: x, score: {format: junit, file: ../r.xml}}\n", "grading.instruments[0].score.file"},
		{"score on a file check", "    - {id: t, kind: file, path: a, exists: true, score: {format: json_line}}\n", "grading.instruments[0].score"},
		{"scale on a command", "    - {id: t, kind: command, command: x, scale: [1, 5]}\n", "grading.instruments[0].scale"},
		{"judge's empty scale", "    - {id: t, kind: judge, model: {provider: scripted, name: j}, script: \"turns:\\n  - text: ok\\n\", rubric: r, scale: [5, 1]}\n", "grading.instruments[0].scale"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseCase("bad.yaml", []byte(head+c.yaml))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a case error", err)
			}
			if ce.File != "bad.yaml" || ce.Line != 5 || ce.Field != c.field {
				t.Fatalf("got %q (line %d, field %q), want bad.yaml line 5 field %s", err, ce.Line, ce.Field, c.field)
			}
		})
	}
}
