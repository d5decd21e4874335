package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/projections/replay"
	"github.com/factline/factline/services/meter/measure"
)

// newDemoCmd is the smoke run of the foundation: a real embedded
// JetStream server, one small run's facts committed by the owners that
// emit them, a race between two writers on one run, and the log replayed
// into projections.
func newDemoCmd() *cobra.Command {
	var store string
	var fsync durabilityFlag
	c := newCommand("demo", noArgs)
	c.RunE = func(c *cobra.Command, _ []string) error {
		return runDemo(c.Context(), store, fsync, c.OutOrStdout())
	}
	c.Flags().StringVar(&store, "store", "", "store directory (default: a fresh temporary one, removed afterwards)")
	fsyncFlag(c, &fsync)
	return c
}

func runDemo(ctx context.Context, store string, fsync durabilityFlag, out io.Writer) error {
	dir := store
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "factline-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	// The store's server, or the one of the process that holds the store.
	t := target{store: dir, fsync: fsync}
	b, closeBus, err := t.open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	fmt.Fprintf(out, "%s\n\n", t.conn.Describe())

	// The run is named as the roster names its one attempt (the meter's
	// measure.Members), so that the report rebuilt from the log counts it
	// and the log audits clean.
	d := demo{b: b, suite: "demo", run: "fix-add-scripted-t1"}
	if err := d.play(ctx, out); err != nil {
		return err
	}

	fmt.Fprintln(out, "\nthe log, replayed from the stream:")
	if _, err := b.Read(ctx, bus.ReadOptions{}, func(r bus.Raw) error {
		f, err := r.Fact()
		if err != nil {
			fmt.Fprintf(out, "%6d undecodable: %v\n", r.Seq, err)
			return nil
		}
		fmt.Fprintln(out, ops.Line(r.Seq, f))
		return nil
	}); err != nil {
		return err
	}
	for _, p := range []projections.Projection{projections.RunsFold, projections.KindsFold} {
		in := p.Start()
		res, err := replay.Run(ctx, replay.Stream(b, bus.ReadOptions{}), in, nil)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "\nprojection %q (%d facts):\n", p.Name(), res.Applied)
		if err := printJSON(out, in.View()); err != nil {
			return err
		}
	}
	return nil
}

type demo struct {
	b          *bus.Bus
	suite, run string
	cause      string // ID of the last fact, for causation
}

// emit commits one fact for the run as the given owner.
func (d *demo) emit(ctx context.Context, owner events.Owner, body events.Body) error {
	run := d.run
	gen := uint32(1)
	if body.Kind().SuiteScoped() {
		run, gen = events.SuiteScope, 0
	}
	recs, err := d.b.Commit(ctx, nil, d.suite, run, func(log bus.RunLog) ([]bus.Pending, error) {
		f, err := events.NewFact(events.Meta{
			Suite: d.suite, Run: run, TaskGeneration: gen, Position: log.NextPosition(),
			Causation: d.cause, Producer: events.Producer{Service: owner, Instance: string(owner) + "-demo"},
		}, body)
		return []bus.Pending{{Fact: f}}, err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", body.Kind(), err)
	}
	d.cause = recs[0].Fact.ID.String()
	return nil
}

// play commits the facts of one tiny run, as each owner would, with two
// runners racing to claim it.
func (d *demo) play(ctx context.Context, out io.Writer) error {
	caseDigest := events.DigestOf([]byte("case: fix-add"))
	treatDigest := events.DigestOf([]byte("treatment: scripted"))
	args := `{"path":"calc.go","old":"a - b","new":"a + b"}`
	evidence := events.EvidenceRef(d.run + "/call-1")
	snapshot := events.DigestOf([]byte("workspace after the edit"))
	cost := uint64(3)
	tokens := uint64(1200 + 80)
	// The blobs the facts name (events.BlobRefs), stored first as the
	// services store them, so that the log and its store audit clean.
	for _, blob := range []string{"suite: demo", "case: fix-add", "treatment: scripted", "request 1", "workspace after the edit"} {
		if _, err := d.b.Blobs().Put(ctx, []byte(blob)); err != nil {
			return fmt.Errorf("demo: store a blob: %w", err)
		}
	}
	steps := []struct {
		owner events.Owner
		body  events.Body
	}{
		{events.OwnerSubmitter, events.SuiteSubmitted{Name: "demo", SpecDigest: events.DigestOf([]byte("suite: demo")),
			Cases: []events.Ref{{ID: "fix-add", Digest: caseDigest}}, Treatments: []events.Ref{{ID: "scripted", Digest: treatDigest}}, Trials: 1}},
		{events.OwnerMeter, events.RunRequested{Case: "fix-add", CaseDigest: caseDigest, Treatment: "scripted", TreatmentDigest: treatDigest, Trial: 1,
			Budget: events.Budget{Steps: 5, Tokens: 10_000}}},
		{"race", nil},
		{events.OwnerRunner, events.TurnStarted{Turn: 1, ContextDigest: events.DigestOf([]byte("request 1")), Messages: 2, Policy: "full"}},
		{events.OwnerRunner, events.ModelReplied{Turn: 1, Provider: "scripted", Model: "demo-script", Text: "Fixing the sign.",
			Calls: []events.ToolCall{{ID: "call-1", Name: "edit_file", Args: args, ArgsDigest: events.DigestOf([]byte(args))}},
			Usage: &events.Usage{InputTokens: 1200, OutputTokens: 80, Cost: &cost}, Finish: "tool_calls"}},
		{events.OwnerRunner, events.DispatchIntended{Turn: 1, CallID: "call-1", Tool: "edit_file", OperationID: d.run + "/1/call-1",
			ArgsDigest: events.DigestOf([]byte(args)), Effect: events.EffectWrite}},
		{events.OwnerRunner, events.DispatchCompleted{Turn: 1, Output: "applied 1 edit to calc.go", Dispatch: events.CompletedDispatch{
			CallID: "call-1", EvidenceRef: evidence, Disposition: events.DispositionExecuted, Mutation: events.MutationApplied,
			Verification: events.Passed(1)}}},
		{events.OwnerRunner, events.TurnCompleted{Evidence: events.RunEvidence{RunID: d.run, TaskGeneration: 1, Turn: 1, EvidencePosition: 7,
			ActorIntent: events.ProposeDone(evidence),
			Dispatches: []events.CompletedDispatch{{CallID: "call-1", EvidenceRef: evidence, Disposition: events.DispositionExecuted,
				Mutation: events.MutationApplied, Verification: events.Passed(1)}}}}},
		{events.OwnerStaller, events.StallObserved{Turn: 1, Observation: events.StallObservation{Position: 8,
			Checkpoint: events.StallCheckpoint{Episode: 1, WriteCredit: 1}}}},
		{events.OwnerDecider, events.StopDecided{Decision: events.StopDecision{DecisionID: d.run + "/1/stop", Turn: 1, TaskGeneration: 1,
			Result: events.Finish(events.StopFinish{Status: events.FinishDone, Supported: []events.RequirementID{"tests-pass"},
				Evidence: []events.EvidenceRef{evidence}, Reason: "the declared check passed after the edit"})}}},
		{events.OwnerRunner, events.CandidateSealed{SnapshotDigest: snapshot, Files: 3}},
		{events.OwnerRunner, events.RunEnded{Status: events.RunDone, Reason: "stop decider: done", Steps: 1,
			Spent: events.Spent{Steps: 1, Tokens: &tokens, Cost: &cost, Millis: 42}, LastEvidence: []events.EvidenceRef{evidence}}},
		{events.OwnerGrader, events.GradeInstrument{SnapshotDigest: snapshot, Result: events.InstrumentResult{
			Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}}},
		{events.OwnerGrader, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: d.run, SnapshotID: snapshot, Revision: 1,
			Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}},
			Result:      events.VerdictOK()}}},
	}
	for _, s := range steps {
		var err error
		if s.owner == "race" {
			err = d.race(ctx, out)
		} else {
			err = d.emit(ctx, s.owner, s.body)
		}
		if err != nil {
			return err
		}
	}
	return d.report(ctx)
}

// report reports the suite as the meter does: the report its pure core
// builds from the suite's facts, stored as a blob, and the suite.reported
// naming it, so that the audit, which holds the blob to the log, passes.
func (d *demo) report(ctx context.Context) error {
	log := measure.NewLog(d.suite)
	var through uint64
	if _, err := d.b.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter(d.suite)}, func(r bus.Raw) error {
		f, err := r.Fact()
		if err != nil {
			return err
		}
		log.Apply(f)
		through = r.Seq
		return nil
	}); err != nil {
		return fmt.Errorf("demo: read the suite to report it: %w", err)
	}
	r := measure.Build(log)
	data, err := measure.EncodeJSON(r)
	if err != nil {
		return fmt.Errorf("demo: encode the report: %w", err)
	}
	digest, err := d.b.Blobs().Put(ctx, data)
	if err != nil {
		return fmt.Errorf("demo: store the report: %w", err)
	}
	body := r.Reported(digest)
	body.Through = through
	return d.emit(ctx, events.OwnerMeter, body)
}

// race shows optimistic concurrency: two writers that loaded the same run
// append at once; one wins, the other is told the run moved on.
func (d *demo) race(ctx context.Context, out io.Writer) error {
	log, err := d.b.LoadRun(ctx, d.suite, d.run)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		f, err := events.NewFact(events.Meta{Suite: d.suite, Run: d.run, TaskGeneration: 1, Position: log.NextPosition(),
			Producer: events.Producer{Service: events.OwnerRunner, Instance: fmt.Sprintf("runner-%d", i+1)}},
			events.RunClaimed{Runner: fmt.Sprintf("runner-%d", i+1), Lease: 1})
		if err != nil {
			return err
		}
		wg.Go(func() { _, errs[i] = d.b.Append(ctx, log.Expect(), bus.Pending{Fact: f}) })
	}
	wg.Wait()
	fmt.Fprintln(out, "two runners claim the same run at once:")
	for i, err := range errs {
		switch {
		case err == nil:
			fmt.Fprintf(out, "  runner-%d: claimed it\n", i+1)
		case errors.Is(err, bus.ErrConflict):
			fmt.Fprintf(out, "  runner-%d: lost the race, its append was refused (%v)\n", i+1, err)
		default:
			return err
		}
	}
	return nil
}
