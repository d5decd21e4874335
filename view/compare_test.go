package view_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeNightly writes a suite named name of two demo cases under the
// demo's stall-on or stall-off treatment, one trial each.
func writeNightly(t *testing.T, dir, name, stall string) string {
	t.Helper()
	demo, err := filepath.Abs("../examples/demo")
	if err != nil {
		t.Fatal(err)
	}
	body := "name: " + name + "\ncases:\n" +
		"  - {path: " + demo + "/cases/misread/case.yaml}\n" +
		"  - {path: " + demo + "/cases/read-only/case.yaml}\n" +
		"treatments:\n  - {path: " + demo + "/treatments/stall-" + stall + ".yaml}\n" +
		"trials: 1\ninputs: {allow_outside: [" + demo + "]}\n"
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The compare page compares any two suites of the log as 'factline
// compare' does: the misread case, which recovers only with the stall
// handler's feedback, regressed from the suite with it on to the one with
// it off, and the stall component is named as what differs. A suite the
// log has not is a 404 naming it.
func TestTheComparePageComparesTwoSuites(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	b := openTestStore(ctx, t, filepath.Join(dir, "store"))
	for _, s := range []struct{ name, stall string }{{"nightly-a", "on"}, {"nightly-b", "off"}} {
		if err := runSuite(ctx, b, writeNightly(t, dir, s.name, s.stall), filepath.Join(dir, s.name)); err != nil {
			t.Fatal(err)
		}
	}
	_, h := serveCaughtUp(t, ctx, b)

	code, body := get(t, h.URL+"/compare")
	if code != http.StatusOK || !strings.Contains(body, "<option>nightly-a</option>") || !strings.Contains(body, "<option>nightly-b</option>") {
		t.Fatalf("/compare: %d, want a choice of both suites\n%s", code, body)
	}
	if _, suites := get(t, h.URL+"/suites"); !strings.Contains(suites, `href="/compare"`) {
		t.Errorf("the suites page has no link to the compare page")
	}
	code, body = get(t, h.URL+"/compare?a=nightly-a&b=nightly-b")
	for _, want := range []string{`data-case="misread" data-verdict="regressed"`, `data-case="read-only" data-verdict="same"`,
		"<td>ablation</td><td>stall", `<span id="regressed">misread</span>`} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("/compare?a=nightly-a&b=nightly-b: %d, want %q", code, want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
	code, js := get(t, h.URL+"/api/compare?a=nightly-a&b=nightly-b")
	var p struct {
		Comparison struct {
			Regressed []string `json:"regressed"`
			Overall   struct {
				Pairs int `json:"pairs"`
			} `json:"overall"`
		} `json:"comparison"`
	}
	if err := json.Unmarshal([]byte(js), &p); code != http.StatusOK || err != nil || !slices.Equal(p.Comparison.Regressed, []string{"misread"}) || p.Comparison.Overall.Pairs != 2 {
		t.Fatalf("/api/compare: %d %v %+v\n%s", code, err, p, js)
	}
	if code, body := get(t, h.URL+"/compare?a=nightly-a&b=missing"); code != http.StatusNotFound || !strings.Contains(body, `suite &#34;missing&#34;: no suite.submitted of it`) {
		t.Errorf("a suite the log has not: %d\n%s", code, body)
	}
}
