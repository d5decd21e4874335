package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/cobra"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/lab/recorded"
	"github.com/factline/factline/ops/audit"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/grader/grade"
)

// newAuditCmd checks the log's invariants and exits non-zero naming
// every violation.
func newAuditCmd() *cobra.Command {
	var o auditFlags
	c := newCommand("audit", noArgs)
	fs := o.src.flags(c, o.run, "an export file to audit instead of a store or a server (a version 3 export holds the blobs its facts name: blob-held and the cases are checked against them)")
	fs.StringVar(&o.suite, "suite", "", "audit one suite")
	fs.StringVar(&o.runID, "run", "", "audit one run")
	fs.StringVar(&o.sinkFile, "sink-records", "", "an external sink's record of effects: one operation ID per line per effect")
	fs.BoolVar(&o.finished, "finished", false, "every run should be over: a started run that never ended is a violation")
	fs.BoolVar(&o.asJSON, "json", false, "one JSON object: the facts read, each violation, the undecodable messages")
	return c
}

// auditFlags are audit's flags.
type auditFlags struct {
	src                    logSource
	suite, runID, sinkFile string
	finished, asJSON       bool
}

// auditRead is what the audit read of the log: the facts in log order,
// each with its stream sequence, the forgeries and the messages that are
// no fact.
type auditRead struct {
	facts       []events.Fact
	seqs        []uint64
	violations  []audit.Violation
	undecodable []auditMessage
	read        int
}

// add reads one message of the log; a message that is no fact is printed
// on out unless the audit prints JSON.
func (a *auditRead) add(r bus.Raw, out io.Writer, asJSON bool) {
	a.read++
	f, err := r.Fact()
	switch {
	case errors.Is(err, events.ErrSubjectMismatch):
		// A forgery: left out of every invariant below, as every
		// reader leaves it out, and named.
		a.violations = append(a.violations, audit.SubjectViolation(r.Seq, r.Subject, err))
		return
	case err != nil:
		a.undecodable = append(a.undecodable, auditMessage{Seq: r.Seq, Subject: r.Subject, Error: err.Error()})
		if !asJSON {
			fmt.Fprintf(out, "message %d on %s is not a fact: %v\n", r.Seq, r.Subject, err)
		}
		return
	}
	a.facts = append(a.facts, f)
	a.seqs = append(a.seqs, r.Seq)
}

// auditInputs is what the audit takes from where the log is besides the
// facts: a store's (or server's) blobs and other suites' runs, or an
// export file's.
type auditInputs struct {
	// where names the log in messages: "the log" or "the export FILE".
	where string
	// casesWhere says where the cases were not found, for the note.
	casesWhere string
	// origins are the facts of the runs the cached replies cite that the
	// audited facts do not hold.
	origins []events.Fact
	// resolve finds a run's case and treatment; nil: no case is held.
	resolve recorded.Resolver
	// blobs is whether each blob the facts name is held.
	blobs heldBlobs
	// blobsWhere names what holds the blobs, in a blob-held violation.
	blobsWhere string
	// noBlobsNote is the note printed when blob-held is not checked.
	noBlobsNote string
	// reportBlob reads a report blob, to hold it to the log (nil: none
	// is read).
	reportBlob func(events.Digest) ([]byte, bool)
}

func (o *auditFlags) run(ctx context.Context, _ []string, out, _ io.Writer) error {
	fromFile, err := o.src.fromFile(ctx)
	if err != nil {
		return err
	}
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
	var a auditRead
	var in auditInputs
	if fromFile {
		in, err = o.readFile(ctx, filter, &a, out)
	} else {
		var closeBus func()
		in, closeBus, err = o.readStore(ctx, filter, &a, out)
		if closeBus != nil {
			defer closeBus()
		}
	}
	if err != nil {
		return err
	}
	violations, facts := a.violations, a.facts
	opts.Origins = in.origins
	grading, unknown := casePlans(ctx, in.resolve, facts)
	opts.Grading = grading
	opts.Seqs = a.seqs
	if in.blobs.checked() {
		opts.Blobs = in.blobs.has
		opts.MissingBase = in.blobs.missingBase
		opts.BlobsWhere = in.blobsWhere
	}
	opts.ReportBlob = in.reportBlob
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
	bad := len(a.undecodable)
	if o.asJSON {
		if err := writeAuditJSON(out, len(facts), suites, violations, a.undecodable, unknown, in.blobs.checked()); err != nil {
			return err
		}
	} else {
		for _, v := range violations {
			fmt.Fprintln(out, v)
		}
		if unknown > 0 {
			fmt.Fprintf(out, "note: the cases of %d runs are not in %s: their grades are re-derived under the plan their facts record\n", unknown, in.casesWhere)
		}
		if !in.blobs.checked() && len(in.blobs.held) > 0 {
			fmt.Fprintf(out, "note: %s: %s was not checked\n", in.noBlobsNote, audit.RuleBlobHeld)
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

// checkRead refuses an audit of a --suite or --run of which where holds no
// fact.
func (o *auditFlags) checkRead(a *auditRead, where string) error {
	if a.read == 0 && (o.suite != "" || o.runID != "") {
		// Nothing read is nothing audited: "every invariant holds" here
		// would pass a gate whose suite or run name is misspelt.
		return fmt.Errorf("%s holds no fact of %s: nothing to audit (is the name right? 'factline replay suites' and 'factline replay runs' list what the log holds)", where, o.scope())
	}
	return nil
}

// readStore reads the facts of filter from the store or server, and what
// the audit takes from it besides: the runs cached replies cite, the
// cases, the blobs held. closeBus, when not nil, releases the connection.
func (o *auditFlags) readStore(ctx context.Context, filter string, a *auditRead, out io.Writer) (auditInputs, func(), error) {
	in := auditInputs{where: "the log", casesWhere: "this store (a copy holds facts, not blobs)"}
	b, closeBus, err := o.src.t.readsExisting().open(ctx)
	if err != nil {
		return in, nil, err
	}
	if _, err := b.Read(ctx, bus.ReadOptions{Filter: filter}, func(r bus.Raw) error {
		a.add(r, out, o.asJSON)
		return nil
	}); err != nil {
		return in, closeBus, err
	}
	if err := o.checkRead(a, in.where); err != nil {
		return in, closeBus, err
	}
	for _, key := range citedRuns(a.facts) {
		log, err := b.LoadRun(ctx, key[0], key[1])
		if err != nil {
			return in, closeBus, fmt.Errorf("load %s/%s, which a cached reply cites: %w", key[0], key[1], err)
		}
		in.origins = append(in.origins, log.Facts()...)
	}
	in.resolve = recorded.FromBus(b)
	in.blobs, err = blobsHeld(ctx, a.facts, func(ctx context.Context, d events.Digest) (bool, events.Digest, error) {
		base, err := b.Blobs().DeltaBase(ctx, d)
		if errors.Is(err, bus.ErrBlobNotFound) {
			return false, "", nil
		}
		return err == nil, base, err
	})
	in.noBlobsNote = fmt.Sprintf("the store holds none of the %d blobs the facts name (a copy of the facts only, imported from an export --no-blobs?)", len(in.blobs.held))
	in.reportBlob = func(d events.Digest) ([]byte, bool) {
		data, err := b.Blobs().Get(ctx, d)
		return data, err == nil
	}
	return in, closeBus, err
}

// readFile reads the facts of filter from the export file, in its order,
// and what the audit takes from it besides: the facts of the runs cached
// replies cite, and (version 3) its blobs, which hold the cases and are
// the blobs held. A file that is no whole export, or whose blob does not
// match its digest, is refused in import's words: nothing is audited.
func (o *auditFlags) readFile(ctx context.Context, filter string, a *auditRead, out io.Writer) (auditInputs, error) {
	// For --file -, the copy of standard input (fromFile); named as
	// standard input.
	path, name := o.src.file, o.src.name()
	in := auditInputs{where: "the export " + name, blobsWhere: "the export"}
	if err := o.src.checkFile(); err != nil {
		return in, err
	}
	where := map[events.Digest]bus.ExportBlob{}
	// The messages that are no fact are printed once the file is known
	// whole: a refused file prints nothing but why.
	var quiet bytes.Buffer
	version, err := readExportFile(path, bus.ExportVisitor{
		Fact: func(r bus.Raw) error {
			if server.SubjectMatchesFilter(r.Subject, filter) {
				a.add(r, &quiet, o.asJSON)
			}
			return ctx.Err()
		},
		Blob: func(b bus.ExportBlob) error {
			where[b.Digest] = b
			return ctx.Err()
		},
	})
	if err != nil {
		return in, err
	}
	if _, err := quiet.WriteTo(out); err != nil {
		return in, err
	}
	if err := o.checkRead(a, in.where); err != nil {
		return in, err
	}
	if cited := citedRuns(a.facts); len(cited) > 0 {
		// The runs other suites' hits cite, read as LoadRun reads them:
		// their facts, forgeries and undecodable messages left out.
		if _, err := readExportFile(path, bus.ExportVisitor{Fact: func(r bus.Raw) error {
			for _, key := range cited {
				if server.SubjectMatchesFilter(r.Subject, events.RunFilter(key[0], key[1])) {
					if f, err := r.Fact(); err == nil {
						in.origins = append(in.origins, f)
					}
					break
				}
			}
			return ctx.Err()
		}}); err != nil {
			return in, err
		}
	}
	// An export holds each blob whole: no delta, no base.
	in.blobs, err = blobsHeld(ctx, a.facts, func(_ context.Context, d events.Digest) (bool, events.Digest, error) {
		_, ok := where[d]
		return ok, "", nil
	})
	in.reportBlob = func(d events.Digest) ([]byte, bool) {
		b, ok := where[d]
		if !ok {
			return nil, false
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, false
		}
		defer f.Close()
		data, err := bus.ReadExportBlob(f, b)
		return data, err == nil
	}
	if version >= 3 {
		in.resolve = recorded.FromExportBlobs(path, where)
		in.casesWhere = fmt.Sprintf("the export %s (its store did not hold them when it was exported)", name)
		in.noBlobsNote = fmt.Sprintf("the export %s holds none of the %d blobs the facts name (a copy of the facts only, exported from a store that held none?)", name, len(in.blobs.held))
	} else {
		in.casesWhere = fmt.Sprintf("the export %s (a version %d export holds facts, not blobs: written by export --no-blobs or before version 3)", name, version)
		in.noBlobsNote = fmt.Sprintf("the export %s holds none of the %d blobs the facts name (a copy of the facts only: version %d, written by export --no-blobs or before version 3)", name, len(in.blobs.held), version)
	}
	return in, err
}

// readExportFile reads the export file at path with v, returning its
// version. A file that is no whole export (a *bus.ExportError, which names
// the file, the entry and, for a blob, its digest) fails the audit with
// nothing audited, exit 1, as every --file reader refuses it.
func readExportFile(path string, v bus.ExportVisitor) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fileError{fmt.Errorf("--file: %w", err)}
	}
	defer f.Close()
	version, err := bus.ReadExportWith(f, v)
	if ee := (*bus.ExportError)(nil); errors.As(err, &ee) {
		return version, fmt.Errorf("nothing was audited: %w", err)
	}
	if err != nil {
		return version, fmt.Errorf("--file %s: %w", path, err)
	}
	return version, nil
}

// heldBlobs is whether the store holds the blob of each digest the
// audited facts name as a blob (events.BlobRefs), and, for one it holds
// as a delta, whether it holds the bases it is rebuilt on.
type heldBlobs struct {
	held map[events.Digest]bool
	// gap is, for a held blob stored as a delta whose chain of bases is
	// not whole, the first base the store does not hold.
	gap map[events.Digest]events.Digest
	n   int // how many of them the store holds
}

// has says whether the store holds d's blob.
func (h heldBlobs) has(d events.Digest) bool { return h.held[d] }

// missingBase is the first base of d's delta chain the store does not
// hold, "" when d can be rebuilt (or is stored whole).
func (h heldBlobs) missingBase(d events.Digest) events.Digest { return h.gap[d] }

// checked says whether blob-held is worth checking: a store that holds
// none of the blobs its facts name is a copy of the facts only (an
// import of an export --no-blobs), whose every blob would be reported.
func (h heldBlobs) checked() bool { return h.n > 0 || len(h.held) == 0 }

// blobStat says whether a blob is held (false, nil: it is not) and, for
// one held as a delta, the blob it is a delta of ("" for a whole one).
type blobStat func(context.Context, events.Digest) (held bool, base events.Digest, err error)

// blobsHeld asks stat about each blob the facts name and, for one held as
// a delta, about each base down to a whole blob: a blob whose base is
// gone is present but cannot be read (an export, which reads it whole,
// fails). Only the stored forms are looked at, never a whole blob rebuilt
// (bus.Blobs.DeltaBase): a delta is small, and the bases a run's requests
// share are asked about once.
func blobsHeld(ctx context.Context, facts []events.Fact, stat blobStat) (heldBlobs, error) {
	h := heldBlobs{held: map[events.Digest]bool{}, gap: map[events.Digest]events.Digest{}}
	type answer struct {
		held bool
		base events.Digest
	}
	asked := map[events.Digest]answer{}
	ask := func(d events.Digest) (answer, error) {
		if a, ok := asked[d]; ok {
			return a, nil
		}
		held, base, err := stat(ctx, d)
		if err != nil {
			return answer{}, err
		}
		asked[d] = answer{held, base}
		return asked[d], nil
	}
	for _, f := range facts {
		for _, ref := range events.BlobRefs(f) {
			if _, done := h.held[ref.Digest]; done {
				continue
			}
			named := func(err error) error {
				return fmt.Errorf("audit: the blob %s that %s of %s/%s names: %w", ref.Digest, f.Kind(), f.Suite, f.Run, err)
			}
			a, err := ask(ref.Digest)
			if err != nil {
				return h, named(err)
			}
			h.held[ref.Digest] = a.held
			if !a.held {
				continue
			}
			h.n++
			// Down the chain, as a read follows it; a chain longer than a
			// read follows is corrupt, which a read (not this rule) says.
			for depth := 0; a.base != "" && depth < bus.MaxDeltaDepth; depth++ {
				base := a.base
				if a, err = ask(base); err != nil {
					return h, named(fmt.Errorf("its base %s: %w", base, err))
				}
				if !a.held {
					h.gap[ref.Digest] = base
					break
				}
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

// citedRuns names the runs that the audited cached replies cite and the
// audited facts do not hold (a re-run's hits cite the suite it re-runs):
// the audit checks each hit against the reply committed there, so their
// facts are loaded as origins.
func citedRuns(facts []events.Fact) [][2]string {
	have := map[[2]string]bool{}
	for _, f := range facts {
		have[[2]string{f.Suite, f.Run}] = true
	}
	var out [][2]string
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
		out = append(out, key)
	}
	return out
}

// casePlans returns the grading plans of the audited runs' cases, read as
// the grader reads them (the case and treatment blobs the run.requested
// names, found by resolve; nil: none is held), and how many runs' cases
// are not held.
func casePlans(ctx context.Context, resolve recorded.Resolver, facts []events.Fact) (func(suite, run string) (grade.Policy, bool), int) {
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
		if resolve == nil {
			unknown++
			continue
		}
		eff, err := resolve(ctx, req)
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
