package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/suites"
)

// benchCase is the case every service benchmark runs (its instruction
// names the case, so that each suite's requests are its own and B8's
// request blobs are stored anew in every repetition): no fixture (an
// empty workspace), one read-only tool, no checks, the stall handler's
// patterns off (a no-op tool repeated every turn would otherwise be a
// stall, which is what the handler is for, not what is measured here).
const benchCase = `id: %s
instruction: List the workspace each turn, then say you are done (case %s).
tools: [list_files]
budget: {steps: %d}
stall:
  repeated_failure: 0
  repeated_observation: 0
  repeated_error: 0
  idle_turns: 0
  alternation: 0
  failing_verifications: 0
`

const benchTreatment = `id: scripted
model: {provider: scripted, scripts: ../scripts}
`

// writeSuite writes a suite of one case under one scripted treatment with
// the given trials to dir. The script calls list_files (a no-op on the
// empty workspace) in every turn but the last, which answers without a
// call: a proposal of done the decider accepts, as no requirement is open.
func writeSuite(dir, name string, trials, turns int) (string, error) {
	var script strings.Builder
	script.WriteString("model: bench-agent\nturns:\n")
	for t := 1; t < turns; t++ {
		script.WriteString("  - text: Let me list the files first.\n    calls: [{name: list_files, args: {path: .}}]\n    usage: {input_tokens: 800, output_tokens: 40, cost: 1}\n")
	}
	script.WriteString("  - text: Nothing needs changing; the task is done.\n    usage: {input_tokens: 900, output_tokens: 20, cost: 1}\n")
	files := map[string]string{
		"cases/noop/case.yaml":              fmt.Sprintf(benchCase, caseID(name), caseID(name), turns+2),
		"treatments/scripted.yaml":          benchTreatment,
		"scripts/" + caseID(name) + ".yaml": script.String(),
		"suite.yaml":                        fmt.Sprintf("name: %s\ncases: [{path: cases/noop/case.yaml}]\ntreatments: [{path: treatments/scripted.yaml}]\ntrials: %d\n", name, trials),
	}
	for p, text := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "suite.yaml"), nil
}

// caseID names the case of a suite after the suite. Run IDs are made of
// case, treatment and trial, and every message ID of a run starts with its
// run ID; JetStream deduplicates message IDs across the whole stream for
// two minutes, so two suites sharing a case ID within that window would
// have their runs' facts taken for duplicates of each other's.
func caseID(suite string) string { return "noop-" + suite }

// submitSuite writes, publishes and submits a suite.
func submitSuite(ctx context.Context, b *bus.Bus, dir, name string, trials, turns int) error {
	path, err := writeSuite(filepath.Join(dir, name), name, trials, turns)
	if err != nil {
		return err
	}
	s, err := suites.Load(path)
	if err != nil {
		return err
	}
	pub, err := suites.Publish(ctx, b.Blobs(), s)
	if err != nil {
		return err
	}
	return submit(ctx, b, pub)
}

// submit commits suite.submitted as suites.Submit does, but under a message
// ID scoped by the suite: suites.SubmitMsgID is the same for every suite,
// so a second suite submitted within JetStream's two-minute deduplication
// window would be dropped as a duplicate of the first.
func submit(ctx context.Context, b *bus.Bus, p *suites.Published) error {
	name := p.Submitted.Name
	_, err := b.Commit(ctx, nil, name, events.SuiteScope, func(log bus.RunLog) ([]bus.Pending, error) {
		if len(log.Records) > 0 {
			return nil, nil
		}
		f, err := events.NewFact(events.Meta{Suite: name, Run: events.SuiteScope, Position: log.NextPosition(),
			Producer: events.Producer{Service: events.OwnerSubmitter, Instance: "factline-bench"}}, p.Submitted)
		return []bus.Pending{{Fact: f, MsgID: name + "/" + suites.SubmitMsgID}}, err
	})
	if err != nil {
		return fmt.Errorf("submit suite %s: %w", name, err)
	}
	return nil
}

// awaitReported waits until every named suite has its suite.reported: the
// meter has settled every planned attempt. A core subscription wakes the
// wait, and the log is checked on every wake. The wake can come before the
// stream has stored the report (the subscription and the stream receive
// the same publish; with fsync always the store is the slower), so a wake
// that finds nothing is followed by checks 1, 2, 4 … ms later rather than
// a second's poll; with no wake at all the log is checked once a second.
// The benchmarks time suites by the stored facts (timeSuite), not by when
// this returns.
func awaitReported(ctx context.Context, b *bus.Bus, names []string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	wake := make(chan struct{}, 1)
	sub, err := b.Conn().Subscribe(events.FactPrefix+".*."+events.SuiteScope+"."+string(events.KindSuiteReported), func(_ *nats.Msg) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	left := append([]string(nil), names...)
	recheck := time.Second
	for len(left) > 0 {
		var still []string
		for _, n := range left {
			done, err := reported(ctx, b, n)
			if err != nil {
				return err
			}
			if !done {
				still = append(still, n)
			}
		}
		left = still
		if len(left) == 0 {
			return nil
		}
		select {
		case <-wake:
			recheck = time.Millisecond
		case <-time.After(recheck):
			recheck = min(2*recheck, time.Second)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("suites %v not reported within %v", left, limit)
			}
			return ctx.Err()
		}
	}
	return nil
}

func reported(ctx context.Context, b *bus.Bus, suite string) (bool, error) {
	log, err := b.LoadRun(ctx, suite, events.SuiteScope)
	if err != nil {
		return false, err
	}
	for _, r := range log.Records {
		if _, ok := r.Fact.Body.(events.SuiteReported); ok {
			return true, nil
		}
	}
	return false, nil
}
