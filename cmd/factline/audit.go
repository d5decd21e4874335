package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/audit"
)

// runAudit checks the log's invariants and exits non-zero naming every
// violation.
func runAudit(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("audit", "audit [--suite S | --run R] [--sink-records FILE] [--finished] (--store DIR | --nats URL)", out)
	var t target
	t.flags(fs)
	suite := fs.String("suite", "", "audit one suite")
	runID := fs.String("run", "", "audit one run")
	sinkFile := fs.String("sink-records", "", "an external sink's record of effects: one operation ID per line per effect")
	finished := fs.Bool("finished", false, "every run should be over: a started run that never ended is a violation")
	if err := parse(fs, args); err != nil {
		return err
	}
	filter := "fact.>"
	switch {
	case *suite != "" && *runID != "":
		filter = events.RunFilter(*suite, *runID)
	case *suite != "":
		filter = events.SuiteFilter(*suite)
	case *runID != "":
		filter = fmt.Sprintf("fact.*.%s.>", *runID)
	}
	var opts audit.Options
	opts.Finished = *finished
	if *sinkFile != "" {
		sink, err := readSinkRecords(*sinkFile)
		if err != nil {
			return err
		}
		opts.Sink = sink
	}
	b, closeBus, err := t.open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	var facts []events.Fact
	var violations []audit.Violation
	bad := 0
	if _, err := b.Read(ctx, bus.ReadOptions{Filter: filter}, func(r bus.Raw) error {
		f, err := r.Fact()
		switch {
		case errors.Is(err, events.ErrSubjectMismatch):
			// A forgery: left out of every invariant below, as every
			// reader leaves it out, and named.
			violations = append(violations, audit.SubjectViolation(r.Seq, r.Subject, err))
			return nil
		case err != nil:
			bad++
			fmt.Fprintf(out, "message %d on %s is not a fact: %v\n", r.Seq, r.Subject, err)
			return nil
		}
		facts = append(facts, f)
		return nil
	}); err != nil {
		return err
	}
	violations = append(violations, audit.Check(facts, opts)...)
	for _, v := range violations {
		fmt.Fprintln(out, v)
	}
	if len(violations) > 0 || bad > 0 {
		return fmt.Errorf("audit of %d facts: %d violations, %d undecodable messages", len(facts), len(violations), bad)
	}
	fmt.Fprintf(out, "audit of %d facts: every invariant holds\n", len(facts))
	return nil
}

func readSinkRecords(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if op := strings.TrimSpace(sc.Text()); op != "" {
			out[op]++
		}
	}
	return out, sc.Err()
}
