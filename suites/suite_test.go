package suites

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/version"
)

// tree writes files (path → content) under a fresh directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const caseYAML = `id: %s
instruction: make check.sh pass
fixture: fixture
grading:
  instruments:
    - {id: tests, kind: command, command: ./check.sh, tests_from_fixture: [check.sh]}
    - {id: review, kind: judge, model: {provider: scripted, name: judge}, script: "turns: []", rubric: r}
`

func suiteFiles(suite string) map[string]string {
	return map[string]string{
		"suite.yaml":                   suite,
		"cases/add/case.yaml":          strings.ReplaceAll(caseYAML, "%s", "add"),
		"cases/add/fixture/x.txt":      "1\n",
		"cases/mul/case.yaml":          strings.ReplaceAll(caseYAML, "%s", "mul"),
		"cases/mul/fixture/x.txt":      "2\n",
		"cases/hold/case.yaml":         strings.ReplaceAll(caseYAML, "%s", "hold"),
		"cases/hold/fixture/x.txt":     "3\n",
		"treatments/base.yaml":         "id: base\nmodel: {provider: scripted, scripts: scripts}\n",
		"treatments/nostall.yaml":      "id: nostall\nmodel: {provider: scripted, scripts: scripts}\nstall: {repeated_failure: 0}\n",
		"treatments/scripts/add.yaml":  "turns: []\n",
		"treatments/scripts/mul.yaml":  "turns: []\n",
		"treatments/scripts/hold.yaml": "turns: []\n",
	}
}

const goodSuite = `name: nightly
description: two cases, two treatments
split: dev
cases:
  - {path: cases/add/case.yaml}
  - {path: cases/mul/case.yaml, split: dev}
  - {path: cases/hold/case.yaml, split: holdout}
treatments:
  - {path: treatments/base.yaml}
  - {path: treatments/nostall.yaml}
trials: 3
required: [tests]
valid_outcomes: [done, blocked, incomplete]
`

func TestLoadSuite(t *testing.T) {
	dir := tree(t, suiteFiles(goodSuite))
	s, err := Load(filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cases) != 2 || s.Cases[0].ID != "add" || len(s.Treatments) != 2 || s.File.Trials != 3 {
		t.Fatalf("loaded %+v", s)
	}
	if len(s.Skipped) != 1 || s.Skipped[0] != "hold" {
		t.Fatalf("the holdout case should be left out of a dev suite: %v", s.Skipped)
	}
	if !strings.HasSuffix(s.Cases[0].Fixture, "cases/add/fixture") {
		t.Fatalf("fixture not resolved: %s", s.Cases[0].Fixture)
	}
	// Defaults.
	f, err := Parse("s.yaml", []byte("name: x\ncases: [{path: a}]\ntreatments: [{path: b}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Split != DefaultSplit || f.Trials != 1 || len(f.ValidOutcomes) != len(DefaultValidOutcomes) {
		t.Fatalf("defaults %+v", f)
	}
}

func TestBadSuites(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"cases: [{path: a}]\ntreatments: [{path: b}]\n", "s.yaml: name: empty subject token"},
		{"name: a.b\ncases: [{path: a}]\ntreatments: [{path: b}]\n", "s.yaml:1: name:"},
		{"name: x\ntreatments: [{path: b}]\n", "s.yaml: cases: required"},
		{"name: x\ncases: [{split: dev}]\ntreatments: [{path: b}]\n", "s.yaml:2: cases[0].path: required"},
		{"name: x\ncases: [{path: a}]\n", "s.yaml: treatments: required"},
		{"name: x\ncases: [{path: a}]\ntreatments: [{path: b}]\nvalid_outcomes: [won]\n", `s.yaml:4: valid_outcomes[0]: unknown run status "won"`},
		{"name: x\ncases: [{path: a}]\ntreatments: [{path: b}]\nrequired: [a/b]\n", "s.yaml:4: required[0]"},
		{"name: x\ncases: [{path: a}]\ntreatments: [{path: b}]\ntrails: 3\n", "trails"},
		{"name: x\ncases: [{path: a, split: 'a b'}]\ntreatments: [{path: b}]\n", "s.yaml:2: cases[0].split"},
	} {
		_, err := Parse("s.yaml", []byte(c.yaml))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
	}
	// Problems found only by loading the files name the suite file and the
	// entry.
	for _, c := range []struct {
		edit func(map[string]string)
		want string
	}{
		{func(f map[string]string) {
			f["suite.yaml"] = strings.Replace(goodSuite, "required: [tests]", "required: [lint]", 1)
		},
			`suite.yaml:5: cases[0]: case add must declare the suite's required instrument "lint"`},
		{func(f map[string]string) { delete(f, "treatments/scripts/mul.yaml") },
			"suite.yaml:9: treatments[0]: scripted treatment base has no script for case mul"},
		{func(f map[string]string) {
			f["cases/mul/case.yaml"] = strings.Replace(f["cases/mul/case.yaml"], "name: judge", "name: ''", 1)
			f["treatments/base.yaml"] = "id: base\nmodel: {provider: scripted, scripts: scripts}\n"
		}, "suite.yaml:6: cases[1]: "},
		{func(f map[string]string) { f["cases/mul/case.yaml"] = strings.ReplaceAll(caseYAML, "%s", "add") },
			`suite.yaml:6: cases[1]: case id "add" is also cases[0]`},
		{func(f map[string]string) {
			f["suite.yaml"] = strings.Replace(goodSuite, "cases/add/case.yaml", "cases/nope.yaml", 1)
		},
			"suite.yaml:5: cases[0]: case:"},
		{func(f map[string]string) {
			s := strings.Replace(goodSuite, "split: dev\ncases", "split: test\ncases", 1)
			f["suite.yaml"] = strings.Replace(s, "{path: cases/add/case.yaml}", "{path: cases/add/case.yaml, split: dev}", 1)
		}, `suite.yaml:5: cases: no case is in split "test"`},
	} {
		files := suiteFiles(goodSuite)
		c.edit(files)
		dir := tree(t, files)
		_, err := Load(filepath.Join(dir, "suite.yaml"))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// A judge that is a treatment's own model is refused when the suite is
// loaded.
func TestJudgeNeverTheActor(t *testing.T) {
	files := suiteFiles(goodSuite)
	files["treatments/base.yaml"] = "id: base\nmodel: {provider: openai, name: judge}\n"
	files["cases/add/case.yaml"] = strings.Replace(files["cases/add/case.yaml"],
		`model: {provider: scripted, name: judge}, script: "turns: []"`, `model: {provider: openai, name: judge}`, 1)
	_, err := Load(filepath.Join(tree(t, files), "suite.yaml"))
	if err == nil || !strings.Contains(err.Error(), `the judge "review" of case add is the model of treatment base`) {
		t.Fatalf("got %v", err)
	}
}

func TestAgentIdentity(t *testing.T) {
	dir := tree(t, suiteFiles(goodSuite))
	s, err := Load(filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	add, base, nostall := s.Cases[0], s.Treatments[0], s.Treatments[1]
	id1, comps, err := AgentIdentity(add, base)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, c := range comps {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "capabilities,context,harness,model,stall" {
		t.Fatalf("components %v", names)
	}
	if harness, _ := version.HarnessOf(version.Current(), nil); comps[2].Value != harness || !strings.Contains(comps[3].Value, `"script":"sha256:`) {
		t.Fatalf("values %+v", comps)
	}
	again, _, _ := AgentIdentity(add, base)
	if again != id1 {
		t.Fatal("the identity is not deterministic")
	}
	id2, comps2, _ := AgentIdentity(add, nostall)
	if id2 == id1 {
		t.Fatal("a different stall policy is the same agent")
	}
	var diff []string
	for i := range comps {
		if comps[i].Value != comps2[i].Value {
			diff = append(diff, comps[i].Name)
		}
	}
	if strings.Join(diff, ",") != "stall" {
		t.Fatalf("base and nostall differ in %v, want only stall", diff)
	}
	// Naming extensions adds one component and changes nothing else.
	withExt := *add
	withExt.Extensions = []string{"search", "notes"}
	id3, comps3, err := AgentIdentity(&withExt, base)
	if err != nil || id3 == id1 {
		t.Fatalf("extensions did not change the identity: %v", err)
	}
	if d := measureDiff(comps, comps3); d != "extensions" {
		t.Fatalf("with extensions differs in %q, want only extensions", d)
	}
	if v := comps3[2]; v.Name != ComponentExtensions || v.Value != `["notes","search"]` {
		t.Fatalf("extensions component %+v", v)
	}
	// The runner replaces it with what it admitted.
	id4, comps4, err := WithComponent(comps3, ComponentExtensions, `[{"name":"notes"}]`)
	if err != nil || id4 == id3 || len(comps4) != len(comps3) || comps4[2].Value != `[{"name":"notes"}]` {
		t.Fatalf("WithComponent: %v %v", comps4, err)
	}
	// A real run.requested can carry them.
	if err := events.ValidateBody(events.RunRequested{Case: "add", CaseDigest: id1, Treatment: "base", TreatmentDigest: id1,
		Trial: 1, Identity: id1, Components: comps}); err != nil {
		t.Fatal(err)
	}
}

func TestPublishAndSubmit(t *testing.T) {
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := tree(t, suiteFiles(goodSuite))
	s, err := Load(filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Publish(ctx, b.Blobs(), s)
	if err != nil {
		t.Fatal(err)
	}
	sub := p.Submitted
	if sub.Name != "nightly" || len(sub.Cases) != 2 || len(sub.Treatments) != 2 || sub.Trials != 3 || sub.Split != "dev" ||
		len(sub.ValidOutcomes) != 3 || len(sub.Required) != 1 {
		t.Fatalf("submitted %+v", sub)
	}
	// Everything it names is in the store, and decodes.
	data, err := b.Blobs().Get(ctx, sub.Cases[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cases.DecodeCase(data)
	if err != nil || c.FixtureDigest == "" || c.Grading == nil {
		t.Fatalf("stored case %+v, %v", c, err)
	}
	if _, err := b.Blobs().Get(ctx, c.FixtureDigest); err != nil {
		t.Fatalf("fixture manifest: %v", err)
	}
	if _, err := b.Blobs().Get(ctx, sub.SpecDigest); err != nil {
		t.Fatalf("spec: %v", err)
	}
	// Publishing again gives the same digests.
	s2, _ := Load(filepath.Join(dir, "suite.yaml"))
	p2, _ := Publish(ctx, b.Blobs(), s2)
	if p2.Submitted.SpecDigest != sub.SpecDigest {
		t.Fatal("publishing is not deterministic")
	}

	if err := Submit(ctx, b, p, "cli"); err != nil {
		t.Fatal(err)
	}
	if err := Submit(ctx, b, p2, "cli"); err != nil {
		t.Fatalf("submitting the same suite again: %v", err)
	}
	log, err := b.LoadRun(ctx, "nightly", events.SuiteScope)
	if err != nil || len(log.Records) != 1 || !log.Records[0].HasMsgID(SubmitMsgID) || log.Records[0].Fact.Producer.Service != events.OwnerSubmitter {
		t.Fatalf("suite log %+v, %v", log.Records, err)
	}
	other := *p
	other.Submitted.SpecDigest = events.DigestOf([]byte("another roster"))
	if err := Submit(ctx, b, &other, "cli"); !errors.Is(err, ErrSuiteExists) {
		t.Fatalf("another roster under the same name: %v", err)
	}
}

// measureDiff names the components whose values differ or that only one
// side has, joined by commas.
func measureDiff(a, b []events.Component) string {
	va := map[string]string{}
	for _, c := range a {
		va[c.Name] = c.Value
	}
	var out []string
	for _, c := range b {
		if v, ok := va[c.Name]; !ok || v != c.Value {
			out = append(out, c.Name)
		}
		delete(va, c.Name)
	}
	for n := range va {
		out = append(out, n)
	}
	return strings.Join(out, ",")
}

// A value of the wrong type in a suite file names the field and line, not a
// Go type.
func TestSuiteTypeErrorsNameTheField(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"name: x\ncases: [{path: a}]\ntreatments: [{path: b}]\ntrials: ten\n", `s.yaml:4: trials: want a whole number, got a string ("ten")`},
		{"name: x\ncases: a\ntreatments: [{path: b}]\n", "s.yaml:2: cases: want a list"},
		{"name: x\ncases: [{path: a, colour: red}]\ntreatments: [{path: b}]\n", "s.yaml:2: cases[0].colour: unknown key"},
	} {
		_, err := Parse("s.yaml", []byte(c.yaml))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%q:\n got  %v\n want %q", c.yaml, err, c.want)
		}
	}
}

// A scripted treatment's scripts are checked when the suite loads, like
// every other input file: a script with an unknown key is refused naming
// the script file, the turn and the key, before anything is submitted.
func TestScriptsCheckedAtLoad(t *testing.T) {
	files := suiteFiles(goodSuite)
	files["treatments/scripts/mul.yaml"] = "turns:\n  - {text: hi}\n  - {txet: typo}\n"
	_, err := Load(filepath.Join(tree(t, files), "suite.yaml"))
	if err == nil || !errors.Is(err, ErrInvalid) {
		t.Fatalf("a script with an unknown key loaded: %v", err)
	}
	for _, want := range []string{"suite.yaml:9: treatments[0]: ", "treatments/scripts/mul.yaml:3:", "turn 2", "txet", "unknown key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not name %q", err, want)
		}
	}
	// A judge's inline script is checked too.
	files = suiteFiles(goodSuite)
	files["cases/add/case.yaml"] = strings.Replace(files["cases/add/case.yaml"], `script: "turns: []"`, `script: "turns: [{verdict: pass}]"`, 1)
	_, err = Load(filepath.Join(tree(t, files), "suite.yaml"))
	if err == nil || !strings.Contains(err.Error(), "grading.instruments[1].script") || !strings.Contains(err.Error(), "verdict") {
		t.Fatalf("a judge script with an unknown key: %v", err)
	}
}

// A suite file's own errors name the line of the key they are about, as a
// case file's do, in YAML and in JSON; those found only by loading the
// files it names (a case that lacks the required instrument, a split with
// no case) as well.
func TestSuiteErrorsNameTheLineOfTheirKey(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"s.yaml", "name: x\ncases:\n  - {path: a}\n  - {split: dev}\ntreatments: [{path: b}]\n", "s.yaml:4: cases[1].path: required"},
		{"s.yaml", "name: x\ncases: [{path: a}]\ntreatments: [{path: b}]\nvalid_outcomes: [done, won]\n", `s.yaml:4: valid_outcomes[1]: unknown run status "won"`},
		{"s.yaml", "name: x\ncases: [{path: a}]\ntreatments: [{path: b}]\ntrials: 3\nrequired: [tests, a/b]\n", "s.yaml:5: required[1]: "},
		{"s.json", "{\"name\": \"x\",\n \"cases\": [{\"path\": \"a\"}],\n \"treatments\": [{\"path\": \"b\"}],\n \"valid_outcomes\": [\"won\"]}\n", `s.json:4: valid_outcomes[0]: unknown run status "won"`},
	} {
		_, err := Parse(c.name, []byte(c.data))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q…", c.data, err, c.want)
		}
	}
	for _, c := range []struct {
		edit func(string) string
		want string
	}{
		{func(s string) string { return strings.Replace(s, "required: [tests]", "required: [lint]", 1) }, "suite.yaml:5: cases[0]: case add must declare"},
		{func(s string) string {
			s = strings.Replace(s, "split: dev\ncases", "split: test\ncases", 1)
			return strings.Replace(s, "{path: cases/add/case.yaml}", "{path: cases/add/case.yaml, split: dev}", 1)
			// A key whose value is a block list is placed at its first
			// item, as in a case file.
		}, `suite.yaml:5: cases: no case is in split "test"`},
		{func(s string) string { return strings.Replace(s, "treatments/nostall.yaml", "treatments/nope.yaml", 1) }, "suite.yaml:10: treatments[1]: "},
	} {
		files := suiteFiles(goodSuite)
		files["suite.yaml"] = c.edit(goodSuite)
		_, err := Load(filepath.Join(tree(t, files), "suite.yaml"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}
