package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
)

// The main job on the demo suite: it measures every attempt, and each demo
// case ends and grades the way its script is meant to show.
func TestRunDemoSuite(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	outDir := t.TempDir()
	code, out, errOut := runCLI(t, "run", "../../examples/demo/suite.yaml", "--store", store, "--fsync", "interval", "--out", outDir, "--json")
	if code != 0 {
		t.Fatalf("run exited %d: %s\n%s", code, errOut, out)
	}
	for _, f := range []string{"report.json", "report.csv", "report.svg"} {
		if st, err := os.Stat(filepath.Join(outDir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	start := strings.Index(out, "{")
	var report map[string]any
	if start < 0 || json.Unmarshal([]byte(out[start:]), &report) != nil {
		t.Fatalf("the JSON report does not parse:\n%s", out)
	}

	// Replaying the stream into the suites projection gives the report run
	// printed; the report command gives it too.
	_, replayed, _ := runCLI(t, "replay", "suites", "--store", store, "--json")
	var reports []map[string]any
	if err := json.Unmarshal([]byte(replayed), &reports); err != nil || len(reports) != 1 {
		t.Fatalf("replay suites: %v\n%s", err, replayed)
	}
	same := func(a, b map[string]any) bool {
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		return string(x) == string(y)
	}
	if !same(reports[0], report) {
		t.Fatal("the replayed report differs from the one run printed")
	}
	_, again, _ := runCLI(t, "report", "demo", "--store", store, "--json")
	var fromReport map[string]any
	if err := json.Unmarshal([]byte(again), &fromReport); err != nil || !same(fromReport, report) {
		t.Fatalf("factline report differs from run's report: %v", err)
	}
	for _, p := range []string{"history", "grades"} {
		code, out, errOut := runCLI(t, "replay", p, "--store", store, "--json")
		var v []any
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
			t.Fatalf("replay %s: %d %q", p, code, errOut)
		}
	}

	// The log keeps every invariant; a deleted fact and a forged effect at
	// the sink both fail the audit.
	if code, out, errOut := runCLI(t, "audit", "--suite", "demo", "--finished", "--store", store); code != 0 || !strings.Contains(out, "every invariant holds") {
		t.Fatalf("audit of the demo: %d\n%s%s", code, out, errOut)
	}
	sinkFile := filepath.Join(t.TempDir(), "sink.txt")
	if err := os.WriteFile(sinkFile, []byte("fix-sum-stall-on-t1/t9/forged\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI(t, "audit", "--suite", "demo", "--sink-records", sinkFile, "--store", store); code != 1 || !strings.Contains(out, "effect-in-log") {
		t.Fatalf("a forged effect passed the audit: %d\n%s", code, out)
	}
	// The same audit for scripts: one JSON object, the same exit status.
	code, out, _ = runCLI(t, "audit", "--suite", "demo", "--sink-records", sinkFile, "--json", "--store", store)
	var doc struct {
		Facts      int  `json:"facts"`
		Holds      bool `json:"holds"`
		Violations []struct{ Rule, Run string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 || doc.Holds || doc.Facts == 0 ||
		len(doc.Violations) != 1 || doc.Violations[0].Rule != "effect-in-log" || doc.Violations[0].Run != "fix-sum-stall-on-t1" {
		t.Fatalf("audit --json: %d %v\n%s", code, err, out)
	}
	lost := copyWithoutOne(t, store, "fact.demo.fix-sum-stall-on-t1.stall.observed")
	if code, out, _ := runCLI(t, "audit", "--suite", "demo", "--store", lost); code != 1 || !strings.Contains(out, "one-stall-per-turn") || !strings.Contains(out, "positions") {
		t.Fatalf("a deleted fact passed the audit: %d\n%s", code, out)
	}

	// Every case's outcome, from the log.
	_, runsJSON, _ := runCLI(t, "replay", "runs", "--store", store, "--json")
	var runs []struct {
		Run, Case, Treatment, Status, Reason string
	}
	if err := json.Unmarshal([]byte(runsJSON), &runs); err != nil || len(runs) != 48 {
		t.Fatalf("%d runs (%v)", len(runs), err)
	}
	want := map[string]string{ // case/treatment → status and a word of the reason
		"fix-sum/stall-on": "done", "fix-sum/stall-off": "done",
		"stuck-loop/stall-on": "incomplete repeated_failure", "stuck-loop/stall-off": "incomplete",
		"over-budget/stall-on": "exhausted budget_preflight", "over-budget/stall-off": "exhausted budget_preflight",
		"needs-key/stall-on": "blocked deploy.key", "needs-key/stall-off": "blocked deploy.key",
		"cheat/stall-on": "done", "poll-job/stall-on": "done", "read-only/stall-on": "done",
		// The stall handler's feedback is what the misread case recovers on.
		"misread/stall-on": "done", "misread/stall-off": "exhausted step_limit",
	}
	for _, r := range runs {
		w, ok := want[r.Case+"/"+r.Treatment]
		if !ok {
			continue
		}
		status, word, _ := strings.Cut(w, " ")
		if r.Status != status || !strings.Contains(r.Reason, word) {
			t.Errorf("%s: %s/%q, want %s/…%s…", r.Run, r.Status, r.Reason, status, word)
		}
	}
	// And how each was graded: only honest work passes.
	_, tail, _ := runCLI(t, "tail", "--store", store, "--since", "start", "--no-follow", "--kind", "grade.verdict")
	passed := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(tail), "\n") {
		f := strings.Fields(l)
		if len(f) > 2 && strings.HasSuffix(l, "result=passed") {
			c := strings.TrimPrefix(f[2], "demo/")
			passed[c[:strings.LastIndex(c, "-t")]] = true
		}
	}
	for c, should := range map[string]bool{"fix-sum": true, "poll-job": true, "read-only": true,
		"cheat": false, "stuck-loop": false, "over-budget": false, "needs-key": false} {
		if passed[c+"-stall-on"] != should || passed[c+"-stall-off"] != should {
			t.Errorf("case %s passed=%v/%v, want %v", c, passed[c+"-stall-on"], passed[c+"-stall-off"], should)
		}
	}
	if !passed["misread-stall-on"] || passed["misread-stall-off"] {
		t.Errorf("misread passed with the stall handler on %v, off %v: want only on", passed["misread-stall-on"], passed["misread-stall-off"])
	}

	// The headline comparison says what the stall handler changes: the
	// misread case's three pairs pass only with it on, and the runs it
	// cuts short spend fewer tokens, each with its interval and pairs.
	var cmp struct {
		Comparisons []struct {
			A, B, Label string
			Pairs       int
			RateA       float64 `json:"rate_a"`
			RateB       float64 `json:"rate_b"`
			McNemar     struct {
				OnlyA int `json:"only_a"`
				OnlyB int `json:"only_b"`
			}
			Usage map[string]struct {
				Unit     string
				Pairs    int
				LeftOut  int `json:"left_out"`
				Relative struct {
					Estimate float64
					Interval *struct{ Lo, Hi float64 }
				}
			}
		}
		Units map[string]string
	}
	printed, _ := json.Marshal(report)
	if err := json.Unmarshal(printed, &cmp); err != nil || len(cmp.Comparisons) != 1 {
		t.Fatalf("comparisons: %v %+v", err, cmp)
	}
	c := cmp.Comparisons[0]
	if c.A != "stall-on" || c.Label != "ablation" || c.Pairs != 24 || c.McNemar.OnlyA != 3 || c.McNemar.OnlyB != 0 || c.RateA-c.RateB != 0.125 {
		t.Errorf("the headline comparison: %+v", c)
	}
	for _, fig := range []string{"tokens", "input_tokens", "output_tokens", "cost", "turns"} {
		u := c.Usage[fig]
		if u.Pairs != 24 || u.LeftOut != 0 || u.Relative.Estimate >= 0 || u.Relative.Interval == nil || u.Unit == "" {
			t.Errorf("%s: %+v, want 24 pairs and stall-on spending less", fig, u)
		}
	}
	if cmp.Units["cost"] != "cost units" || cmp.Units["wall"] != "ms" {
		t.Errorf("units %v", cmp.Units)
	}
	// The chart's bars say what they count, in words.
	if svg, err := os.ReadFile(filepath.Join(outDir, "report.svg")); err != nil ||
		!strings.Contains(string(svg), "12 passed of 24 graded") || !strings.Contains(string(svg), "9 passed of 24 graded") {
		t.Errorf("report.svg does not label its bars N passed of M graded: %v", err)
	}
}

func TestRunRefusesBadSuites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("t.yaml", "id: t\nmodel: {provider: scripted, scripts: s}\n")
	write("s/c.yaml", "turns: []\n")
	write("c.yaml", "id: c\ninstruction: x\ntools: [rm_rf]\n")
	write("neg.yaml", "id: c\ninstruction: x\nbudget: {steps: -1}\n")
	write("good.yaml", "id: c\ninstruction: x\n")
	write("ten.yaml", "id: c\ninstruction: x\nbudget: {steps: \"ten\"}\n")
	write("bad-script/t.yaml", "id: t\nmodel: {provider: scripted, scripts: s}\n")
	write("bad-script/s/c.yaml", "turns:\n  - {text: hi, colour: red}\n")
	write("bad-script/c.yaml", "id: c\ninstruction: x\n")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("not for the blob store\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write("out.yaml", "id: c\ninstruction: x\nfixture: "+outside+"\n")
	for _, c := range []struct{ file, body, want string }{
		{"missing.yaml", "name: s\ncases: [{path: nope.yaml}]\ntreatments: [{path: t.yaml}]\n", "nope.yaml"},
		{"tool.yaml", "name: s\ncases: [{path: c.yaml}]\ntreatments: [{path: t.yaml}]\n", `unknown tool "rm_rf"`},
		{"budget.yaml", "name: s\ncases: [{path: neg.yaml}]\ntreatments: [{path: t.yaml}]\n", "steps"},
		{"syntax.yaml", "name: s\ncases: [\n", "syntax.yaml"},
		{"fixture-out.yaml", "name: s\ncases: [{path: out.yaml}]\ntreatments: [{path: t.yaml}]\n", "fixture: \"" + outside},
		{"zero-trials.yaml", "name: s\ncases: [{path: good.yaml}]\ntreatments: [{path: t.yaml}]\ntrials: 0\n", "trials: 0 is too few"},
		{"huge-trials.yaml", "name: s\ncases: [{path: good.yaml}]\ntreatments: [{path: t.yaml}]\ntrials: 100000000\n", "trials: 100000000 is too large"},
		{"ten-steps.yaml", "name: s\ncases: [{path: ten.yaml}]\ntreatments: [{path: t.yaml}]\n", "ten.yaml:3: budget.steps: want a whole number"},
		{"bad-script/suite.yaml", "name: s\ncases: [{path: c.yaml}]\ntreatments: [{path: t.yaml}]\n", "bad-script/s/c.yaml:2:"},
		{"bad-script/suite2.yaml", "name: s\ncases: [{path: c.yaml}]\ntreatments: [{path: t.yaml}]\n", "turn 1: colour: unknown key"},
	} {
		path := write(c.file, c.body)
		code, _, errOut := runCLI(t, "run", path, "--store", t.TempDir())
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 2 || !strings.Contains(lines[0], c.want) {
			t.Errorf("%s: exit %d, first line %q; want exit 2 naming %q", c.file, code, lines[0], c.want)
		}
	}
}

// copyWithoutOne returns a copy of a store whose log lacks the last
// message of a subject, as a lost or tampered fact would leave it. The
// store itself refuses the delete (its log is append-only), so the copy
// is imported into a FACTS stream made the way it was before
// deny_delete, which is what a store that was never made append-only has.
func copyWithoutOne(t *testing.T, store, subject string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var defers []func()
	defer func() {
		for i := len(defers) - 1; i >= 0; i-- {
			defers[i]()
		}
	}()
	// open starts a server on dir until the helper returns: the commands
	// the test runs next open the stores themselves.
	open := func(dir string, before func(jetstream.JetStream)) (*bus.Bus, jetstream.Stream) {
		srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: dir, Durability: bus.SyncInterval})
		if err != nil {
			t.Fatal(err)
		}
		defers = append(defers, srv.Shutdown)
		nc, err := srv.Connect()
		if err != nil {
			t.Fatal(err)
		}
		defers = append(defers, nc.Close)
		js, _ := jetstream.New(nc)
		if before != nil {
			before(js)
		}
		b, err := bus.Open(ctx, nc, bus.Config{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		s, err := js.Stream(ctx, bus.FactsStream)
		if err != nil {
			t.Fatal(err)
		}
		return b, s
	}
	b, s := open(store, nil)
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, m.Sequence); err == nil {
		t.Fatalf("the store let message %d be deleted", m.Sequence)
	}
	var export bytes.Buffer
	if _, err := b.Export(ctx, &export, bus.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cb, cs := open(dir, func(js jetstream.JetStream) {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: bus.FactsStream, Subjects: []string{"fact.>"}, Storage: jetstream.FileStorage,
			Retention: jetstream.LimitsPolicy, Replicas: 1, Duplicates: 2 * time.Minute, AllowDirect: true}); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := cb.Import(ctx, &export); err != nil {
		t.Fatal(err)
	}
	if m, err = cs.GetLastMsgForSubject(ctx, subject); err != nil {
		t.Fatal(err)
	}
	if err := cs.DeleteMsg(ctx, m.Sequence); err != nil {
		t.Fatal(err)
	}
	return dir
}

// run and demo never start a second server on a store another process
// holds (two servers on one directory would corrupt it): they attach to
// its server and say so. A record of a server that no process holding the
// store stands behind (its holder was killed, and something else listens
// at its address now) is never followed.
func TestRunAndDemoAttachToTheStoresHolder(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	srv := startServe(t, "--services", "meter", "--store", store)
	held := fmt.Sprintf("is held by process %d", os.Getpid())
	for _, args := range [][]string{{"run", "testdata/tiny/suite.yaml", "--store", store}, {"demo", "--store", store}} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || !strings.Contains(out+errOut, held) || !strings.Contains(out+errOut, "attached to its server") {
			t.Fatalf("%s on a held store: %d %q %q", args[0], code, out, errOut)
		}
	}
	if code := srv.stop(); code != 0 {
		t.Fatalf("serve exited %d: %q", code, srv.errOut.String())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	stale := fmt.Sprintf("nats://%s\npid %d\nfsync always\nauth nkey\n", ln.Addr(), os.Getpid())
	if err := os.WriteFile(filepath.Join(store, bus.StoreRecordFile), []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "demo", "--store", store)
	if code != 0 || !strings.Contains(out, "embedded JetStream in") {
		t.Fatalf("demo on a store whose record no holder stands behind: %d %q %q", code, out, errOut)
	}
}
