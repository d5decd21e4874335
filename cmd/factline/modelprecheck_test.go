package main

import (
	"strings"
	"testing"
)

// A local run builds every hosted model its treatments and judges name, as
// its embedded runner and grader will, before anything is submitted: a
// model they could not build (no key for api.openai.com, a key variable
// misspelt, a bad FACTLINE_OPENAI_MAX_TOKENS_FIELD) ended every run errored
// as a harness error, the suite submitted and 'factline retry' suggested.
// Now it is refused at once, naming the treatment or the judge and what to
// set, and the store is not even opened. (Not parallel: it sets the
// environment the models are built from.)
func TestALocalRunBuildsItsModelsBeforeSubmitting(t *testing.T) {
	for _, v := range []string{"FACTLINE_OPENAI_API_KEY", "OPENAI_API_KEY", "FACTLINE_OPENAI_BASE_URL", "OPENAI_BASE_URL",
		"FACTLINE_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY", "FACTLINE_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL", "FACTLINE_OPENAI_MAX_TOKENS_FIELD"} {
		t.Setenv(v, "")
	}
	caseYAML := "id: c\ninstruction: say hi\nbudget: {steps: 2}\n"
	judged := caseYAML + "grading:\n  instruments:\n    - {id: review, kind: judge, rubric: 'is it right?', model: {provider: anthropic, name: claude-judge}}\n"
	for _, c := range []struct {
		name, treatment, kase, env string
		want                       []string
	}{
		{"no key", "id: gpt\nmodel: {provider: openai, name: gpt-4.1-mini}\n", caseYAML, "",
			[]string{"treatment gpt", "no API key for api.openai.com", "FACTLINE_OPENAI_API_KEY", "nothing was submitted"}},
		{"bad field", "id: local\nmodel: {provider: openai, name: q, base_url: 'http://127.0.0.1:9/v1'}\n", caseYAML, "max_tokenz",
			[]string{"treatment local", `max tokens field "max_tokenz"`, "nothing was submitted"}},
		{"judge", "id: local\nmodel: {provider: openai, name: q, base_url: 'http://127.0.0.1:9/v1'}\n", judged, "",
			[]string{"case c", "judge review", "no API key", "nothing was submitted"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("FACTLINE_OPENAI_MAX_TOKENS_FIELD", c.env)
			suite := writeSuite(t, map[string]string{
				"suite.yaml": "name: models\ncases:\n  - {path: case.yaml}\ntreatments:\n  - {path: t.yaml}\ntrials: 1\n",
				"case.yaml":  c.kase,
				"t.yaml":     c.treatment,
			})
			store := t.TempDir()
			code, out, errOut := runCLI(t, "run", suite, "--store", store, "--fsync", "interval")
			if code == 0 || strings.Contains(out, "runs:") {
				t.Fatalf("exit %d; the suite ran:\n%s\n%s", code, out, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not say %q", errOut, w)
				}
			}
			if code, _, errOut := runCLI(t, "report", "models", "--store", store); code != 1 || !strings.Contains(errOut, "no store at") {
				t.Errorf("after the refusal the store holds the suite: exit %d, %q", code, errOut)
			}
		})
	}
}
