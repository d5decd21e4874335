package cases

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const gradedCase = `id: g
instruction: x
checks:
  - {id: tests, command: ./check.sh}
grading:
  allow_missing_advisory: true
  instruments:
    - {id: tests, kind: command, command: ./check.sh, tests_from_fixture: [check.sh, "tests/*"]}
    - {id: answer, kind: file, path: out/answer.json, json_path: "$.result[0].value", equals: {a: 1}}
    - {id: scope, kind: scope, allow: [answer.txt, "src/*.go"], version: "2.1"}
    - id: review
      kind: judge
      model: {provider: scripted, name: judge-1}
      script: "turns:\n  - text: 'VERDICT: PASS'\n"
      rubric: the answer is right
      files: [answer.txt]
`

func TestGradingDefaults(t *testing.T) {
	c, err := ParseCase("g.yaml", []byte(gradedCase))
	if err != nil {
		t.Fatal(err)
	}
	g := c.Grading
	if g == nil || len(g.Instruments) != 4 || !g.AllowMissingAdvisory {
		t.Fatalf("grading not read: %+v", g)
	}
	tests, _ := g.Instrument("tests")
	if tests.Version != "1" || !tests.IsRequired() || !tests.IsBinding() || tests.OnTestEdit != TestEditRestore ||
		tests.Timeout.Std() != DefaultCommandTimeout || tests.RequirementID() != "tests" {
		t.Errorf("command defaults: %+v", tests)
	}
	review, _ := g.Instrument("review")
	if review.IsRequired() || review.IsBinding() || review.Timeout.Std() != DefaultJudgeTimeout {
		t.Errorf("a judge is advisory and not binding by default: %+v", review)
	}
	scope, _ := g.Instrument("scope")
	if scope.Version != "2.1" {
		t.Errorf("version %q", scope.Version)
	}
	// The stored case keeps the section.
	data, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeCase(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Grading.Instruments[0], g.Instruments[0]) || back.Grading.Instruments[1].Equals == nil {
		t.Fatalf("stored grading round trip: %+v", back.Grading)
	}
	// A case without the section stores no key for it, so the digests of
	// existing cases do not move.
	plain, _ := ParseCase("p.yaml", []byte("id: p\ninstruction: x\n"))
	data, _ = plain.Encode()
	if strings.Contains(string(data), "grading") {
		t.Fatalf("an absent grading section is stored: %s", data)
	}
}

func TestBadGrading(t *testing.T) {
	head := "id: a\ninstruction: x\ngrading:\n  instruments:\n"
	cases := []struct{ yaml, want string }{
		{"    - {kind: command, command: x}\n", "grading.instruments[0].id"},
		{"    - {id: t, command: x}\n", "grading.instruments[0].kind: required"},
		{"    - {id: t, kind: shell, command: x}\n", `grading.instruments[0].kind: unknown kind "shell"`},
		{"    - {id: t, kind: command, command: x}\n    - {id: t, kind: scope, allow: [a]}\n", `grading.instruments[1].id: duplicate instrument id "t"`},
		{"    - {id: t, kind: command}\n", "grading.instruments[0].command: required"},
		{"    - {id: t, kind: command, command: x, version: 'a/b'}\n", "grading.instruments[0].version"},
		{"    - {id: t, kind: command, command: x, on_test_edit: refuse}\n", "grading.instruments[0].on_test_edit: needs tests_from_fixture"},
		{"    - {id: t, kind: command, command: x, tests_from_fixture: [a], on_test_edit: ignore}\n", `on_test_edit: unknown mode "ignore"`},
		{"    - {id: t, kind: command, command: x, tests_from_fixture: ['[']}\n", "grading.instruments[0].tests_from_fixture[0]"},
		{"    - {id: t, kind: command, command: x, expect_exit: 300}\n", "expect_exit"},
		{"    - {id: t, kind: command, command: x, path: y}\n", "grading.instruments[0].path: does not apply to a command instrument"},
		{"    - {id: t, kind: file, path: a, contains: x, matches: y}\n", "exactly one of"},
		{"    - {id: t, kind: file, path: ../a, exists: true}\n", "grading.instruments[0].path"},
		{"    - {id: t, kind: file, path: a, matches: '('}\n", "grading.instruments[0].matches"},
		{"    - {id: t, kind: file, path: a, json_path: 'a[x]', equals: 1}\n", "grading.instruments[0].json_path"},
		{"    - {id: t, kind: scope}\n", "grading.instruments[0].allow: required"},
		{"    - {id: t, kind: judge, rubric: r, model: {provider: scripted, name: j}}\n", "grading.instruments[0].script"},
		{"    - {id: t, kind: judge, rubric: r, script: s, model: {provider: scripted}}\n", "grading.instruments[0].model.name"},
		{"    - {id: t, kind: judge, script: s, model: {provider: scripted, name: j}}\n", "grading.instruments[0].rubric"},
		{"    - {id: t, kind: judge, rubric: r}\n", "grading.instruments[0].model: required"},
		{"    - {id: t, kind: command, command: x, requirement: nope}\n", `grading.instruments[0].requirement: no requirement with id "nope"`},
	}
	for _, c := range cases {
		_, err := ParseCase("bad.yaml", []byte(head+c.yaml))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "bad.yaml") {
			t.Errorf("%q: got %v, want an error naming bad.yaml and containing %q", c.yaml, err, c.want)
		}
	}
}

func TestMatchGlob(t *testing.T) {
	cases := []struct {
		glob, path string
		want       bool
	}{
		{"check.sh", "check.sh", true},
		{"check.sh", "sub/check.sh", true},
		{"check.sh", "check.sh.bak", false},
		{"tests", "tests/unit/a_test.go", true},
		{"*_test.go", "pkg/a_test.go", true},
		{"tests/*.sh", "tests/run.sh", true},
		{"tests/*.sh", "other/tests/run.sh", false},
		{"src/*", "src/deep/a.go", true},
		{"src/*", "srcx/a.go", false},
		{"answer.txt", "answer.txt", true},
		{"answer.txt", "notes.txt", false},
	}
	for _, c := range cases {
		if got := MatchGlob(c.glob, c.path); got != c.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", c.glob, c.path, got, c.want)
		}
	}
}

func TestParseJSONPath(t *testing.T) {
	got, err := ParseJSONPath(`$.result[0]["odd key"].v`)
	want := []JSONStep{{Key: "result"}, {Index: 0, IsIndex: true}, {Key: "odd key"}, {Key: "v"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v", got, err)
	}
	if got, err := ParseJSONPath("a.b"); err != nil || len(got) != 2 || got[1].Key != "b" {
		t.Fatalf("without $: %+v, %v", got, err)
	}
	for _, bad := range []string{"$", "", "$.", "a..b", "a[", "a[-1]", "a[x]"} {
		if _, err := ParseJSONPath(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
