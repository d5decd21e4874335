package main

import (
	"bufio"
	"context"
	"encoding/json"
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
	asJSON := fs.Bool("json", false, "one JSON object: the facts read, each violation, the undecodable messages")
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
	b, closeBus, err := t.readsExisting().open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	var facts []events.Fact
	var violations []audit.Violation
	var undecodable []auditMessage
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
			undecodable = append(undecodable, auditMessage{Seq: r.Seq, Subject: r.Subject, Error: err.Error()})
			if !*asJSON {
				fmt.Fprintf(out, "message %d on %s is not a fact: %v\n", r.Seq, r.Subject, err)
			}
			return nil
		}
		facts = append(facts, f)
		return nil
	}); err != nil {
		return err
	}
	violations = append(violations, audit.Check(facts, opts)...)
	if *asJSON {
		if err := writeAuditJSON(out, len(facts), violations, undecodable); err != nil {
			return err
		}
	} else {
		for _, v := range violations {
			fmt.Fprintln(out, v)
		}
	}
	if len(violations) > 0 || bad > 0 {
		return fmt.Errorf("audit of %d facts: %d violations, %d undecodable messages", len(facts), len(violations), bad)
	}
	if !*asJSON {
		fmt.Fprintf(out, "audit of %d facts: every invariant holds\n", len(facts))
	}
	return nil
}

// auditMessage is a message the audit could not read as a fact.
type auditMessage struct {
	Seq     uint64 `json:"seq"`
	Subject string `json:"subject"`
	Error   string `json:"error"`
}

// writeAuditJSON writes the audit as one JSON object; the exit status
// says the same as "holds".
func writeAuditJSON(out io.Writer, facts int, vs []audit.Violation, undecodable []auditMessage) error {
	type violation struct {
		Suite  string `json:"suite"`
		Run    string `json:"run"`
		Rule   string `json:"rule"`
		Detail string `json:"detail"`
	}
	doc := struct {
		Facts       int            `json:"facts"`
		Holds       bool           `json:"holds"`
		Violations  []violation    `json:"violations"`
		Undecodable []auditMessage `json:"undecodable"`
	}{Facts: facts, Holds: len(vs) == 0 && len(undecodable) == 0, Violations: []violation{}, Undecodable: undecodable}
	if doc.Undecodable == nil {
		doc.Undecodable = []auditMessage{}
	}
	for _, v := range vs {
		doc.Violations = append(doc.Violations, violation{v.Suite, v.Run, v.Rule, v.Detail})
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
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
