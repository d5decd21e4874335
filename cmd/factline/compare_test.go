package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// nightly writes a suite named nightly of three demo cases under one demo
// treatment (stall-on or stall-off), two trials each. With edited, its
// read-only case is a copy whose budget differs: the same ID, another
// content digest.
func nightly(t *testing.T, dir, stall string, edited bool) string {
	t.Helper()
	demo, err := filepath.Abs("../../examples/demo")
	if err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(demo, "cases/read-only/case.yaml")
	if edited {
		c := filepath.Join(dir, "read-only")
		if err := os.CopyFS(c, os.DirFS(filepath.Join(demo, "cases/read-only"))); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(c, "case.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		data = []byte(strings.Replace(string(data), "budget: {steps: 3}", "budget: {steps: 4}", 1))
		if !strings.Contains(string(data), "steps: 4") {
			t.Fatal("the read-only case's budget moved: edit the test")
		}
		readOnly = filepath.Join(c, "case.yaml")
		if err := os.WriteFile(readOnly, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	suite := "name: nightly\ncases:\n" +
		"  - {path: " + filepath.Join(demo, "cases/misread/case.yaml") + "}\n" +
		"  - {path: " + readOnly + "}\n" +
		"  - {path: " + filepath.Join(demo, "cases/fix-sum/case.yaml") + "}\n" +
		"treatments:\n  - {path: " + filepath.Join(demo, "treatments/stall-"+stall+".yaml") + "}\n" +
		"trials: 2\ninputs: {allow_outside: [" + demo + ", " + dir + "]}\n"
	path := filepath.Join(dir, "nightly-"+stall+".yaml")
	if err := os.WriteFile(path, []byte(suite), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// compareJSON runs compare --json and decodes what it prints.
func compareJSON(t *testing.T, args ...string) (int, map[string]any, string) {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"compare", "--json"}, args...)...)
	var c map[string]any
	if code == 0 || code == exitGateFailed {
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatalf("compare %v: exit %d, stdout is no JSON (%v): %q %q", args, code, err, out, errOut)
		}
	}
	return code, c, errOut
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// Must show: suite B (the stall handler off) compared with suite A (on),
// each run in its own store, A also read from its export and from a
// server the export was imported into: the misread
// case regressed, the stall component is named as what differs, and the
// read-only case, edited in B, is refused from the pairing unless
// --allow-changed-cases. The gates on run and compare exit 3 when they
// fail and 0 when they hold; --junit writes one test case per attempt.
func TestCompareTwoStoresAndAnExport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	storeA, storeB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if code, _, errOut := runCLI(t, "run", nightly(t, dir, "on", false), "--store", storeA, "--fsync", "interval", "--fail-under", "1"); code != 0 {
		t.Fatalf("run A with --fail-under 1 (every attempt passes): exit %d\n%s", code, errOut)
	}
	export := filepath.Join(dir, "a.flx")
	if code, _, errOut := runCLI(t, "export", "--store", storeA, "--out", export); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	junit := filepath.Join(dir, "b.xml")
	code, out, errOut := runCLI(t, "run", nightly(t, dir, "off", true), "--store", storeB, "--fsync", "interval",
		"--fail-under", "0.9", "--junit", junit, "--baseline", "nightly@"+export, "--fail-if-worse", "10")
	if code != exitGateFailed || !strings.Contains(errOut, "--fail-under 0.9: treatment stall-off: pass rate 66.7% (4 of 6)") ||
		!strings.Contains(errOut, "--fail-if-worse 10: B's pass rate is 50.0 points under A's") {
		t.Fatalf("run B with failing gates: exit %d, want %d naming both gates\nstdout %s\nstderr %s", code, exitGateFailed, out, errOut)
	}
	if !strings.Contains(out, "changed case read-only") || !strings.Contains(out, "regressed: misread") {
		t.Errorf("run --baseline prints no comparison under the report:\n%s", out)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Cases    []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil || len(doc.Suites) != 1 || doc.Suites[0].Tests != 6 || doc.Suites[0].Failures != 2 ||
		doc.Suites[0].Cases[0].Name != "misread/stall-off/1" {
		t.Fatalf("--junit: %v %+v, want 6 test cases, 2 failures, the first misread/stall-off/1\n%s", err, doc, data)
	}

	// Two stores.
	code, c, errOut := compareJSON(t, "nightly@"+storeA, "nightly@"+storeB)
	if code != 0 {
		t.Fatalf("compare two stores: exit %d: %s", code, errOut)
	}
	overall := c["overall"].(map[string]any)
	if got := strs(c["regressed"]); !slices.Equal(got, []string{"misread"}) || overall["label"] != "ablation" ||
		!slices.Equal(strs(overall["differences"]), []string{"stall"}) || overall["pairs"] != 4.0 {
		t.Fatalf("compare two stores: regressed %v, label %v, differences %v, pairs %v; want misread, an ablation of stall, 4 pairs",
			c["regressed"], overall["label"], overall["differences"], overall["pairs"])
	}
	changed := c["changed_cases"].([]any)
	if len(changed) != 1 || changed[0].(map[string]any)["case"] != "read-only" || changed[0].(map[string]any)["paired"] != false {
		t.Fatalf("the edited case: %v, want read-only refused from the pairing", changed)
	}
	for _, cc := range c["cases"].([]any) {
		if cc.(map[string]any)["case"] == "read-only" {
			t.Fatalf("the refused case has a row: %v", cc)
		}
	}

	// An export and a store (the default --store), the edited case allowed.
	code, c, errOut = compareJSON(t, "nightly@"+export, "nightly", "--store", storeB, "--allow-changed-cases")
	if code != 0 || c["overall"].(map[string]any)["pairs"] != 6.0 || c["changed_cases"].([]any)[0].(map[string]any)["paired"] != true {
		t.Fatalf("compare an export with a store, changed cases allowed: exit %d (%s), overall %v, changed %v; want 6 pairs, read-only paired",
			code, errOut, c["overall"], c["changed_cases"])
	}

	// A server: the export imported into a NATS server, read by its URL.
	srv := bustest.Server(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	if code, out, errOut := runCLI(t, "import", export, "--nats", srv.ClientURL()); code != 0 {
		t.Fatalf("import into a server: %d %s %s", code, out, errOut)
	}
	code, c, errOut = compareJSON(t, "nightly@"+srv.ClientURL(), "nightly@"+storeB)
	if code != 0 || !slices.Equal(strs(c["regressed"]), []string{"misread"}) || c["overall"].(map[string]any)["pairs"] != 4.0 {
		t.Fatalf("compare a server with a store: exit %d (%s), regressed %v", code, errOut, c["regressed"])
	}

	// The gates: exit 3 when one fails, 0 when they hold.
	for _, g := range []struct {
		args []string
		code int
	}{
		{[]string{"--fail-if-worse", "10"}, exitGateFailed},
		{[]string{"--fail-if-worse", "60"}, 0},
		{[]string{"--fail-under", "0.9"}, exitGateFailed},
		{[]string{"--fail-under", "50%", "--fail-if-worse", "50"}, 0},
		{[]string{"--fail-under", "scorer=quality:1"}, exitGateFailed}, // no grade names it: what cannot be measured cannot pass
	} {
		code, out, errOut := runCLI(t, append([]string{"compare", "nightly@" + export, "nightly@" + storeB}, g.args...)...)
		if code != g.code || (g.code == exitGateFailed) != strings.Contains(errOut, "gate failed") {
			t.Errorf("compare %v: exit %d, want %d\n%s%s", g.args, code, g.code, out, errOut)
		}
	}
	code, md, errOut := runCLI(t, "compare", "nightly@"+export, "nightly@"+storeB, "--markdown")
	if code != 0 || !strings.Contains(md, "| stall-on → stall-off | ablation; what differs: stall |") || !strings.Contains(md, "**Regressed:** `misread`") {
		t.Errorf("--markdown: exit %d\n%s%s", code, md, errOut)
	}
}

// Bad calls of compare are usage errors naming what is wrong, before any
// store is opened.
func TestCompareUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"compare", "a"}, "name two suites"},
		{[]string{"compare", "a@", "b@x"}, "nothing after @"},
		{[]string{"compare", "a.b@x", "b@x"}, "not allowed in a subject token"},
		{[]string{"compare", "a@x", "b@x", "--json", "--csv"}, "give one of"},
		{[]string{"compare", "a@x", "b@x", "--fail-under", "2"}, `--fail-under "2": a pass rate is between 0 and 1`},
		{[]string{"compare", "a@x", "b@x", "--fail-if-worse", "5%"}, "without %"},
		{[]string{"compare", "a@x", "b@x", "--treatment", "=b"}, "want NAME or A_NAME=B_NAME"},
		{[]string{"run", "x.yaml", "--fail-if-worse", "5"}, "needs a --baseline"},
		{[]string{"run", "x.yaml", "--baseline", "nightly", "--fail-if-worse", "5"}, "say where the baseline is"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.says) {
			t.Errorf("factline %v: exit %d, stderr %q; want 2 saying %q", c.args, code, errOut, c.says)
		}
	}
	if code, _, errOut := runCLI(t, "compare", "a@"+filepath.Join(t.TempDir(), "missing.flx"), "b@x"); code != 2 || !strings.Contains(errOut, "no such file") {
		t.Errorf("a missing export: exit %d, stderr %q; want 2 naming it", code, errOut)
	}
}

// A suite whose every attempt ended as a harness error exits 5, not 0: it
// measured the harness, not the agent. Its JUnit file skips each attempt
// as excluded.
func TestRunEveryAttemptAHarnessError(t *testing.T) {
	t.Parallel()
	junit := filepath.Join(t.TempDir(), "junit.xml")
	code, out, errOut := runCLI(t, "run", "testdata/harnesserr/suite.yaml", "--store", t.TempDir(), "--fsync", "interval", "--junit", junit)
	if code != exitAllHarnessErrors || !strings.Contains(errOut, "every one of suite harnesserr's 1 attempts ended as a harness error") {
		t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, exitAllHarnessErrors, out, errOut)
	}
	data, err := os.ReadFile(junit)
	if err != nil || !strings.Contains(string(data), `<skipped message="excluded: ended errored`) {
		t.Fatalf("--junit: %v\n%s", err, data)
	}
}
