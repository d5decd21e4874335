package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCLI runs the command line in this process with args. Its context
// only guards against a command that never returns: it is no bound on how
// long a command may take, which grows with the load. Two minutes was
// one: on a loaded machine, with tests in parallel, the 48-run demo suite
// and the 200-trial disk-full suite ran past it and failed with "context
// deadline exceeded" while still making progress.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code = run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// The demo is what 'make run' shows: it must commit a whole run, show the
// race between two runners and replay the log into projections.
func TestDemo(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	code, out, errOut := runCLI(t, "demo", "--store", store, "--fsync", "interval")
	if code != 0 {
		t.Fatalf("demo exited %d: %s", code, errOut)
	}
	for _, want := range []string{"claimed it", "lost the race", "wrong last sequence", "stop.decided", "finish done",
		"grade.verdict", `projection "runs" (15 facts)`, `"status": "done"`} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}

	// Its log is one the services could have written: it audits clean
	// (the report it records is the one its facts rebuild).
	if code, out, errOut := runCLI(t, "audit", "--store", store, "--finished"); code != 0 || strings.Contains(out, "not checked") {
		t.Fatalf("the demo's log: audit exited %d\n%s%s", code, out, errOut)
	}

	// The store it left behind replays, exports and imports.
	code, out, errOut = runCLI(t, "replay", "kinds", "--store", store, "--json")
	if code != 0 {
		t.Fatalf("replay exited %d: %s", code, errOut)
	}
	var counts map[string]int
	if err := json.Unmarshal([]byte(out), &counts); err != nil || counts["run.claimed"] != 1 || counts["stop.decided"] != 1 {
		t.Fatalf("replay kinds = %v (%v) from %q", counts, err, out)
	}
	export := filepath.Join(t.TempDir(), "demo.flx")
	// Its store holds every blob its facts name, as the services' would.
	if code, out, errOut = runCLI(t, "export", "--store", store, "--out", export); code != 0 || !strings.Contains(out, "exported 15 messages and 6 blobs") || strings.Contains(out, "missing") {
		t.Fatalf("export: %d %q %q", code, out, errOut)
	}
	fresh := t.TempDir()
	if code, out, errOut = runCLI(t, "import", "--store", fresh, export); code != 0 || !strings.Contains(out, "imported 15 messages") {
		t.Fatalf("import: %d %q %q", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "tail", "--store", store, "--since", "start", "--no-follow", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 15 {
		t.Fatalf("tail --json: %d, %d lines, %q", code, len(lines), errOut)
	}
	for _, l := range lines {
		var v struct {
			Seq  uint64
			Fact map[string]any
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil || v.Seq == 0 || v.Fact["kind"] == nil {
			t.Fatalf("tail line %q does not parse: %v", l, err)
		}
	}
	code, out, _ = runCLI(t, "tail", "--store", store, "--since", "start", "--no-follow", "--kind", "stop.decided")
	if code != 0 || strings.Count(out, "stop.decided") != 1 || !strings.Contains(out, "finish done") {
		t.Fatalf("tail --kind: %d %q", code, out)
	}
	var runs []struct{ Run string }
	_, runsJSON, _ := runCLI(t, "replay", "runs", "--store", store, "--json")
	if err := json.Unmarshal([]byte(runsJSON), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v %q", err, runsJSON)
	}
	// The run has ended: a steer can no longer be taken in, and the
	// command says so instead of reporting it sent.
	if code, _, errOut := runCLI(t, "steer", runs[0].Run, "also add a test", "--store", store); code != 1 || !strings.Contains(errOut, "was not accepted: the run ended done") {
		t.Fatalf("steer of an ended run: %d %q", code, errOut)
	}
	if code, out, errOut := runCLI(t, "steer", runs[0].Run, "also add a test", "--wait", "0", "--store", store); code != 0 || !strings.Contains(out, "not waiting") {
		t.Fatalf("steer --wait 0: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "cancel", "nosuchrun", "--store", store); code != 1 || !strings.Contains(errOut, `no run "nosuchrun"`) {
		t.Fatalf("cancel of an unknown run: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "approve", runs[0].Run, "op-1", "--store", store); code != 2 || !strings.Contains(errOut, "approve needs --args-digest") {
		t.Fatalf("approve without a digest: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "resolve", runs[0].Run, "op-1", "--store", store); code != 2 || !strings.Contains(errOut, "--applied or --not-applied") {
		t.Fatalf("resolve without a finding: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "resolve", runs[0].Run, "op-1", "--applied", "--store", store); code != 1 || !strings.Contains(errOut, "resolve") || !strings.Contains(errOut, "not accepted") {
		t.Fatalf("resolve on an ended run: %d %q", code, errOut)
	}
	_, fromStore, _ := runCLI(t, "replay", "runs", "--store", fresh, "--json")
	_, fromFile, _ := runCLI(t, "replay", "runs", "--file", export, "--json")
	if fromStore == "" || fromStore != fromFile {
		t.Fatalf("runs from the imported store and from the file differ:\n%s\n%s", fromStore, fromFile)
	}
}

func TestBadInvocations(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "x.flx")
	if err := os.WriteFile(file, []byte("not an export"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"demo", "--fsync", "sometimes"}, 2, `durability "sometimes"`},
		{[]string{"demo", "--nope"}, 2, "unknown flag: --nope"},
		{[]string{"replay"}, 2, "name the projection"},
		{[]string{"replay", "nosuch", "--file", file}, 2, `no projection named "nosuch"`},
		{[]string{"replay", "runs"}, 2, "--store DIR or --nats URL"},
		{[]string{"replay", "runs", "--file", file}, 1, "not a factline export"},
		{[]string{"import", "--store", t.TempDir()}, 2, "exactly one export FILE"},
		{[]string{"export", "--store", "a", "--nats", "b", "--out", file}, 2, "not both"},
		{[]string{"serve", "--services", "runner,oracle", "--store", t.TempDir()}, 2, `unknown service "oracle"`},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--nats", "nats://127.0.0.1:1"}, 2, "--listen needs --store"},
		{[]string{"serve", "--ack-wait", "10ms", "--store", t.TempDir()}, 2, "--ack-wait must be at least 1s"},
		{[]string{"serve", "--max-deliver", "-1", "--store", t.TempDir()}, 2, "--max-deliver must be at least 1, got -1"},
		{[]string{"run", "suite.yaml", "--instances", "0"}, 2, "--instances must be at least 1"},
		{[]string{"run", "suite.yaml", "--request-window", "-1"}, 2, "--request-window must be at least 1, got -1"},
		{[]string{"serve", "--request-window", "-3", "--store", t.TempDir()}, 2, "--request-window must be at least 1, got -3"},
		{[]string{"run", "testdata/tiny/suite.yaml", "--nats", "nats://127.0.0.1:1", "--request-window", "5"}, 2, "with --nats the fleet's meter requests the runs"},
		{[]string{"tail", "--since", "yesterday", "--store", t.TempDir()}, 2, `--since "yesterday"`},
		{[]string{"report", "demo", "--json", "--csv", "--store", t.TempDir()}, 2, "give one of --json, --csv and --svg"},
	}
	for _, c := range cases {
		code, _, errOut := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("factline %v: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
	if code, out, _ := runCLI(t, "replay", "--help"); code != 0 || !strings.Contains(out, "factline replay PROJECTION [flags]") {
		t.Errorf("replay --help: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, "projections"); code != 0 || !strings.Contains(out, "runs") || !strings.Contains(out, "kinds") {
		t.Errorf("projections: %d %q", code, out)
	}
}
