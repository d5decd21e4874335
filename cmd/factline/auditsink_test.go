package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An effect only the sink's record holds is printed with what is known of
// it: the suite and run when the operation's ID names a run the log holds,
// else that only the sink saw it; never a placeholder "?" for a suite or
// run, in text or in --json.
func TestAnAuditNamesWhatItKnowsOfASinkOnlyEffect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	var runs []struct{ Run string }
	if _, out, _ := runCLI(t, "replay", "runs", "--store", store, "--json"); json.Unmarshal([]byte(out), &runs) != nil || len(runs) == 0 {
		t.Fatalf("replay runs: %s", out)
	}
	known := runs[0].Run
	sinkFile := filepath.Join(dir, "sink.txt")
	records := "forged-op\nnosuch-run/t1/c\n" + known + "/t9/forged\n"
	if err := os.WriteFile(sinkFile, []byte(records), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, _ := runCLI(t, "audit", "--store", store, "--sink-records", sinkFile)
	if code != 1 {
		t.Fatalf("effects the log never intended passed the audit: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "?/") || strings.Contains(out, "/?") {
		t.Errorf("a violation names a placeholder suite or run:\n%s", out)
	}
	for _, want := range []string{
		"sink: effect-in-log: the sink holds 1 effect(s) of operation forged-op,",
		"sink: effect-in-log: the sink holds 1 effect(s) of operation nosuch-run/t1/c,",
		"tiny/" + known + ": effect-in-log: the sink holds 1 effect(s) of operation " + known + "/t9/forged,",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the audit does not say %q:\n%s", want, out)
		}
	}

	code, out, _ = runCLI(t, "audit", "--store", store, "--sink-records", sinkFile, "--json")
	var doc struct {
		Violations []struct{ Suite, Run, Rule, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 || len(doc.Violations) != 3 {
		t.Fatalf("audit --json: exit %d, %v\n%s", code, err, out)
	}
	got := map[string][2]string{}
	for _, v := range doc.Violations {
		if v.Rule != "effect-in-log" {
			t.Errorf("a %s violation: %+v", v.Rule, v)
		}
		for _, op := range []string{"forged-op", "nosuch-run/t1/c", known + "/t9/forged"} {
			if strings.Contains(v.Detail, "operation "+op+",") {
				got[op] = [2]string{v.Suite, v.Run}
			}
		}
	}
	want := map[string][2]string{"forged-op": {"", ""}, "nosuch-run/t1/c": {"", ""}, known + "/t9/forged": {"tiny", known}}
	for op, w := range want {
		if g, ok := got[op]; !ok || g != w {
			t.Errorf("operation %s: suite and run %q, want %q\n%s", op, g, w, out)
		}
	}
}
