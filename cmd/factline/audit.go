package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases/caseload"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/audit"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/grader/grade"
)

// newAuditCmd checks the log's invariants and exits non-zero naming
// every violation.
func newAuditCmd() *cobra.Command {
	var o auditFlags
	c := newCommand("audit", noArgs)
	fs := onTarget(c, &o.t, o.run)
	fs.StringVar(&o.suite, "suite", "", "audit one suite")
	fs.StringVar(&o.runID, "run", "", "audit one run")
	fs.StringVar(&o.sinkFile, "sink-records", "", "an external sink's record of effects: one operation ID per line per effect")
	fs.BoolVar(&o.finished, "finished", false, "every run should be over: a started run that never ended is a violation")
	fs.BoolVar(&o.asJSON, "json", false, "one JSON object: the facts read, each violation, the undecodable messages")
	return c
}

// auditFlags are audit's flags.
type auditFlags struct {
	t                      target
	suite, runID, sinkFile string
	finished, asJSON       bool
}

func (o *auditFlags) run(ctx context.Context, _ []string, out, _ io.Writer) error {
	t := &o.t
	filter := "fact.>"
	switch {
	case o.suite != "" && o.runID != "":
		filter = events.RunFilter(o.suite, o.runID)
	case o.suite != "":
		filter = events.SuiteFilter(o.suite)
	case o.runID != "":
		filter = fmt.Sprintf("fact.*.%s.>", o.runID)
	}
	var opts audit.Options
	opts.Finished = o.finished
	if o.sinkFile != "" {
		sink, err := readSinkRecords(o.sinkFile)
		if err != nil {
			return fileError{fmt.Errorf("--sink-records: %w", err)}
		}
		opts.Sink = sink
	}
	b, closeBus, err := t.readsExisting().open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	var facts []events.Fact
	var seqs []uint64
	var violations []audit.Violation
	var undecodable []auditMessage
	bad, read := 0, 0
	if _, err := b.Read(ctx, bus.ReadOptions{Filter: filter}, func(r bus.Raw) error {
		read++
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
			if !o.asJSON {
				fmt.Fprintf(out, "message %d on %s is not a fact: %v\n", r.Seq, r.Subject, err)
			}
			return nil
		}
		facts = append(facts, f)
		seqs = append(seqs, r.Seq)
		return nil
	}); err != nil {
		return err
	}
	if read == 0 && (o.suite != "" || o.runID != "") {
		// Nothing read is nothing audited: "every invariant holds" here
		// would pass a gate whose suite or run name is misspelt.
		return fmt.Errorf("the log holds no fact of %s: nothing to audit (is the name right? 'factline replay suites' and 'factline replay runs' list what the log holds)", o.scope())
	}
	if opts.Origins, err = cacheOrigins(ctx, b, facts); err != nil {
		return err
	}
	grading, unknown := casePlans(ctx, b, facts)
	opts.Grading = grading
	opts.Seqs = seqs
	blobs, err := blobsHeld(ctx, b, facts)
	if err != nil {
		return err
	}
	if blobs.checked() {
		opts.Blobs = blobs.has
	}
	violations = append(violations, audit.Check(facts, opts)...)
	// Run IDs are unique within a suite only: --run alone audits every
	// suite's run of the ID, and the verdict says whose, so that a pass
	// is not taken for one run's.
	var suites []string
	what := fmt.Sprintf("audit of %d facts", len(facts))
	if o.runID != "" && o.suite == "" {
		for _, f := range facts {
			if !slices.Contains(suites, f.Suite) {
				suites = append(suites, f.Suite)
			}
		}
		if len(suites) > 1 {
			what += fmt.Sprintf(" of run %q of %d suites (%s)", o.runID, len(suites), strings.Join(suites, ", "))
		} else {
			suites = nil
		}
	}
	if o.asJSON {
		if err := writeAuditJSON(out, len(facts), suites, violations, undecodable, unknown, blobs.checked()); err != nil {
			return err
		}
	} else {
		for _, v := range violations {
			fmt.Fprintln(out, v)
		}
		if unknown > 0 {
			fmt.Fprintf(out, "note: the cases of %d runs are not in this store (a copy holds facts, not blobs): their grades are re-derived under the plan their facts record\n", unknown)
		}
		if !blobs.checked() && len(blobs.held) > 0 {
			fmt.Fprintf(out, "note: the store holds none of the %d blobs the facts name (a copy of the facts only, imported from an export --no-blobs?): %s was not checked\n", len(blobs.held), audit.RuleBlobHeld)
		}
	}
	if len(violations) > 0 || bad > 0 {
		return fmt.Errorf("%s: %d violations, %d undecodable messages", what, len(violations), bad)
	}
	if !o.asJSON {
		fmt.Fprintf(out, "%s: every invariant holds\n", what)
	}
	return nil
}

// heldBlobs is whether the store holds the blob of each digest the
// audited facts name as a blob (events.BlobRefs).
type heldBlobs struct {
	held map[events.Digest]bool
	n    int // how many of them the store holds
}

// has says whether the store holds d's blob.
func (h heldBlobs) has(d events.Digest) bool { return h.held[d] }

// checked says whether blob-held is worth checking: a store that holds
// none of the blobs its facts name is a copy of the facts only (an
// import of an export --no-blobs), whose every blob would be reported.
func (h heldBlobs) checked() bool { return h.n > 0 || len(h.held) == 0 }

// blobsHeld asks the store's blob bucket about each blob the facts name.
func blobsHeld(ctx context.Context, b *bus.Bus, facts []events.Fact) (heldBlobs, error) {
	h := heldBlobs{held: map[events.Digest]bool{}}
	for _, f := range facts {
		for _, ref := range events.BlobRefs(f) {
			if _, asked := h.held[ref.Digest]; asked {
				continue
			}
			_, err := b.Blobs().Stat(ctx, ref.Digest)
			switch {
			case err == nil:
				h.held[ref.Digest] = true
				h.n++
			case errors.Is(err, bus.ErrBlobNotFound):
				h.held[ref.Digest] = false
			default:
				return h, fmt.Errorf("audit: the blob %s that %s of %s/%s names: %w", ref.Digest, f.Kind(), f.Suite, f.Run, err)
			}
		}
	}
	return h, nil
}

// scope names the suite or run the audit was asked for.
func (o *auditFlags) scope() string {
	switch {
	case o.suite != "" && o.runID != "":
		return fmt.Sprintf("run %q of suite %q", o.runID, o.suite)
	case o.runID != "":
		return fmt.Sprintf("run %q", o.runID)
	}
	return fmt.Sprintf("suite %q", o.suite)
}

// auditMessage is a message the audit could not read as a fact.
type auditMessage struct {
	Seq     uint64 `json:"seq"`
	Subject string `json:"subject"`
	Error   string `json:"error"`
}

// writeAuditJSON writes the audit as one JSON object; the exit status
// says the same as "holds".
func writeAuditJSON(out io.Writer, facts int, suites []string, vs []audit.Violation, undecodable []auditMessage, casesUnknown int, blobsChecked bool) error {
	type violation struct {
		Suite  string `json:"suite"`
		Run    string `json:"run"`
		Rule   string `json:"rule"`
		Detail string `json:"detail"`
	}
	doc := struct {
		Facts int `json:"facts"`
		// Suites names the suites audited when --run alone named an ID
		// several suites share.
		Suites      []string       `json:"suites,omitempty"`
		Holds       bool           `json:"holds"`
		Violations  []violation    `json:"violations"`
		Undecodable []auditMessage `json:"undecodable"`
		// CasesUnknown counts the runs whose case the store does not
		// hold: their grades were re-derived from the facts alone.
		CasesUnknown int `json:"cases_unknown"`
		// BlobsChecked says whether blob-held was checked: false when the
		// store holds none of the blobs the facts name (a copy of facts).
		BlobsChecked bool `json:"blobs_checked"`
	}{Facts: facts, Suites: suites, Holds: len(vs) == 0 && len(undecodable) == 0, Violations: []violation{}, Undecodable: undecodable,
		CasesUnknown: casesUnknown, BlobsChecked: blobsChecked}
	if doc.Undecodable == nil {
		doc.Undecodable = []auditMessage{}
	}
	for _, v := range vs {
		doc.Violations = append(doc.Violations, violation{v.Suite, v.Run, v.Rule, v.Detail})
	}
	return printJSON(out, doc)
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

// cacheOrigins loads the runs that the audited cached replies cite and the
// audited facts do not hold (a re-run's hits cite the suite it re-runs):
// the audit checks each hit against the reply committed there.
func cacheOrigins(ctx context.Context, b *bus.Bus, facts []events.Fact) ([]events.Fact, error) {
	have := map[[2]string]bool{}
	for _, f := range facts {
		have[[2]string{f.Suite, f.Run}] = true
	}
	var out []events.Fact
	for _, f := range facts {
		r, ok := f.Body.(events.ModelReplied)
		if !ok || r.Cached == nil {
			continue
		}
		key := [2]string{r.Cached.Suite, r.Cached.Run}
		if have[key] || events.ValidateToken("suite", key[0]) != nil || events.ValidateToken("run", key[1]) != nil {
			continue // audited already, or no run's name: the audit says the origin is missing
		}
		have[key] = true
		log, err := b.LoadRun(ctx, key[0], key[1])
		if err != nil {
			return nil, fmt.Errorf("load %s/%s, which a cached reply cites: %w", key[0], key[1], err)
		}
		out = append(out, log.Facts()...)
	}
	return out, nil
}

// casePlans returns the grading plans of the audited runs' cases, read as
// the grader reads them (the case and treatment blobs the run.requested
// names), and how many runs' cases the store does not hold.
func casePlans(ctx context.Context, b *bus.Bus, facts []events.Fact) (func(suite, run string) (grade.Policy, bool), int) {
	loader := caseload.New(0)
	plans := map[[2]string]grade.Policy{}
	unknown := 0
	for _, f := range facts {
		req, ok := f.Body.(events.RunRequested)
		if !ok {
			continue
		}
		key := [2]string{f.Suite, f.Run}
		if _, done := plans[key]; done {
			continue
		}
		eff, err := loader.ForRequest(ctx, b, req)
		if err != nil {
			unknown++
			continue
		}
		plans[key] = grader.Plan(eff.Case.Grading)
	}
	return func(suite, run string) (grade.Policy, bool) {
		p, ok := plans[[2]string{suite, run}]
		return p, ok
	}, unknown
}
