package stall_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/staller/stall"
)

// Scenario files (testdata/*.txt) drive the core the way etcd/raft's
// interaction tests do: a run's turns in, one line per observation out.
//
//	# comment
//	policy repeated_failure=2 repair_budget=0 require=tests,docs,write
//	turn edit:a fail:tests=want_2
//	turn                      (a turn without tool calls)
//	steer
//	----
//	t1 none | armed=[] ep=1 rep=0 credit=1 open=true
//	...
//
// Calls: edit:ARGS[=CONTENT] (applied), noop:ARGS, reject:ARGS,
// cmd:ARGS=>OUT, err:ARGS=>CODE/MESSAGE, pass:CHECK, stale:CHECK (a pass
// on the epoch before the last edit), pending:CHECK, fail:CHECK=D1,D2
// (complete diagnostics), partial:CHECK=D1,D2, claim. Underscores stand
// for spaces. Run with -rewrite to regenerate the expected sections, and
// read the diff before keeping it.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of scenario files")

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			in, want, ok := strings.Cut(string(data), "\n----\n")
			if !ok {
				t.Fatalf("%s: no ---- line", file)
			}
			got := playScenario(t, in)
			if *rewrite {
				if err := os.WriteFile(file, []byte(in+"\n----\n"+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("%s: got\n%s\nwant\n%s", file, got, want)
			}
		})
	}
}

func playScenario(t *testing.T, script string) string {
	var out strings.Builder
	var r *run
	for ln, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		switch fields[0] {
		case "policy":
			r = newRun(t, parsePolicy(t, fields[1:]))
		case "steer":
			r.steer("changed task")
		case "turn":
			if r == nil {
				t.Fatalf("line %d: turn before policy", ln+1)
			}
			var calls []call
			for _, tok := range fields[1:] {
				calls = append(calls, parseCall(t, r, tok))
			}
			o := r.step(calls...)
			out.WriteString(describe(r.turn, o) + "\n")
		default:
			t.Fatalf("line %d: unknown directive %q", ln+1, fields[0])
		}
	}
	return out.String()
}

func parsePolicy(t *testing.T, kvs []string) stall.Policy {
	var p stall.Policy
	ints := map[string]*int{
		"repeated_failure": &p.RepeatedFailure, "repeated_observation": &p.RepeatedObservation,
		"repeated_error": &p.RepeatedError, "idle_turns": &p.IdleTurns, "alternation": &p.Alternation,
		"failing_verifications": &p.FailingVerifications, "repair_budget": &p.RepairBudget,
	}
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case ints[k] != nil:
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("policy %s: %v", k, err)
			}
			*ints[k] = n
		case k == "escalate_to":
			p.EscalateTo = v
		case k == "require":
			for _, id := range strings.Split(v, ",") {
				switch id {
				case "write":
					p.Requirements = append(p.Requirements, stall.Requirement{ID: stall.WriteRequirement, Write: true})
					p.FixtureDigest = events.DigestOf([]byte("fixture"))
				case "docs":
					p.Requirements = append(p.Requirements, stall.Requirement{ID: "docs"})
				default:
					p.Requirements = append(p.Requirements, stall.Requirement{ID: events.RequirementID(id), Check: id})
				}
			}
		default:
			t.Fatalf("unknown policy key %q", k)
		}
	}
	return p
}

func parseCall(t *testing.T, r *run, tok string) call {
	sp := func(s string) string { return strings.ReplaceAll(s, "_", " ") }
	kind, rest, _ := strings.Cut(tok, ":")
	switch kind {
	case "edit":
		args, content, _ := strings.Cut(rest, "=")
		return editTo(args, content)
	case "noop":
		return noopEdit(rest)
	case "reject":
		return rejectedEdit(rest)
	case "cmd":
		args, out, _ := strings.Cut(rest, "=>")
		return cmd(sp(args), sp(out))
	case "err":
		args, e, _ := strings.Cut(rest, "=>")
		code, msg, _ := strings.Cut(e, "/")
		c := cmd(sp(args), "")
		c.errCode, c.errMsg = code, sp(msg)
		return c
	case "pass":
		return pass(rest)
	case "stale":
		c := pass(rest)
		c.epoch = max(r.epoch-1, 1)
		return c
	case "pending":
		return pending(rest)
	case "fail", "partial":
		check, diags, _ := strings.Cut(rest, "=")
		var ds []string
		for _, d := range strings.Split(diags, ",") {
			if d != "" {
				ds = append(ds, sp(d))
			}
		}
		return fail(check, kind == "fail", ds...)
	case "claim":
		return taskComplete("{}")
	}
	t.Fatalf("unknown call %q", tok)
	return call{}
}

// describe prints one observation on one line.
func describe(n uint32, o events.StallObservation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "t%d %s", n, action(o))
	if o.Action != nil {
		switch a := o.Action.Variant().(type) {
		case events.StallRetry:
			fmt.Fprintf(&b, " %s remaining=%d", a.Cause, a.Remaining)
		case events.StallEscalate:
			fmt.Fprintf(&b, " %s target=%s evidence=%v", a.Cause, a.Target, a.Evidence)
		case events.StallStop:
			fmt.Fprintf(&b, " %s unmet=%v evidence=%v", a.Cause, a.Unmet, a.Evidence)
		}
	}
	c := o.Checkpoint
	fmt.Fprintf(&b, " | armed=%v ep=%d rep=%d credit=%d open=%t", c.Armed, c.Episode, c.RepairsUsed, c.WriteCredit, c.OpenFailure)
	if c.FeedbackDelivered > 0 || c.Opportunity > 0 {
		fmt.Fprintf(&b, " delivered=%d opportunity=%d", c.FeedbackDelivered, c.Opportunity)
	}
	return b.String()
}
