package recorded_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/lab/recorded"
	"github.com/factline/factline/lab/whatif"
	"github.com/factline/factline/projections/replay"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

const demo = "../../examples/demo/suite.yaml"

// runDemo runs the demo suite to its report on a real embedded server.
func runDemo(t *testing.T, ctx context.Context) *bus.Bus { return runSuite(t, ctx, demo) }

// runSuite runs a suite file to its report on a real embedded server.
func runSuite(t *testing.T, ctx context.Context, path string) *bus.Bus {
	t.Helper()
	b, _ := bustest.Start(t)
	f, err := fleet.Start(ctx, b, fleet.Options{Per: map[string][]kit.Option{
		fleet.Runner: {runner.WithWorkDir(t.TempDir())},
		fleet.Grader: {grader.WithWorkDir(t.TempDir())},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := fleettest.SubmitFile(ctx, b, path, "lab-test")
	if err != nil {
		t.Fatal(err)
	}
	err = fleettest.Await(ctx, b, p.Spec.Name, events.SuiteScope, func(log bus.RunLog) bool {
		return slices.ContainsFunc(log.Records, func(r bus.Record) bool { _, ok := r.Fact.Body.(events.SuiteReported); return ok })
	})
	if err != nil {
		t.Fatalf("%s was never reported: %v", path, err)
	}
	if err := f.Stop(); err != nil {
		t.Fatal(err)
	}
	return b
}

// The demo's runs, read from the store or from an export file with the
// suite file standing in for the blobs, are the same runs, and replayed
// under their own policies each is decided as it was recorded.
func TestRecordedRunsReplayAsTheyRanFromAStoreAndFromAnExport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := runDemo(t, ctx)

	fromBus, err := recorded.Load(ctx, replay.Stream(b, bus.ReadOptions{}), nil, recorded.FromBus(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(fromBus.Runs) == 0 || len(fromBus.Skipped) != 0 || len(fromBus.Bad) != 0 {
		t.Fatalf("from the store: %d runs, skipped %v, bad %v", len(fromBus.Runs), fromBus.Skipped, fromBus.Bad)
	}

	export := filepath.Join(t.TempDir(), "demo.export")
	w, err := os.Create(export)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Export(ctx, w, bus.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	resolve, err := recorded.FromSuite(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := recorded.Load(ctx, replay.File(export), nil, resolve)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromFile.Runs) != len(fromBus.Runs) || len(fromFile.Skipped) != 0 {
		t.Fatalf("from the export: %d runs (store: %d), skipped %v", len(fromFile.Runs), len(fromBus.Runs), fromFile.Skipped)
	}
	for i, r := range fromFile.Runs {
		if r.ID != fromBus.Runs[i].ID || len(r.Facts) != len(fromBus.Runs[i].Facts) || r.Effective.Stall != fromBus.Runs[i].Effective.Stall {
			t.Fatalf("run %d differs: %s (%d facts) vs %s (%d facts)", i, r.ID, len(r.Facts), fromBus.Runs[i].ID, len(fromBus.Runs[i].Facts))
		}
	}

	rep := whatif.Evaluate(fromBus.Runs, nil)
	if s := rep.Candidates[0]; s.Same != len(fromBus.Runs) {
		for _, o := range s.Outcomes {
			if o.Change != whatif.Same {
				t.Errorf("%s: recorded stop %d, replayed stop %d", o.Run, o.RecordedStop, o.Stop)
			}
		}
		t.Fatalf("the recorded policy decides %d of %d runs as recorded", s.Same, len(fromBus.Runs))
	}
	stops := 0
	for _, o := range rep.Candidates[0].Outcomes {
		if o.RecordedStop != 0 {
			stops++
		}
	}
	if stops == 0 {
		t.Fatal("the demo recorded no stall stop, so replaying it proves little")
	}
	strict := whatif.Candidate{Name: "strict", Stall: cases.StallPolicy{RepeatedObservation: ptr(1), IdleTurns: ptr(1), RepairBudget: ptr(0)}}
	if s := whatif.Evaluate(fromBus.Runs, []whatif.Candidate{strict}).Candidates[1]; s.Earlier == 0 {
		t.Fatalf("a policy stopping at the first repeat changed nothing: %+v", s)
	}
}

func ptr(v int) *int { return &v }

// A case file edited since the run no longer matches its digest: the run
// is skipped, saying why, rather than replayed under a policy it did not
// run under.
func TestARunWhoseCaseFileChangedIsSkippedNamingIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := events.RunRequested{Case: "fix-sum", CaseDigest: events.DigestOf([]byte("another case")), Treatment: "stall-on",
		TreatmentDigest: events.DigestOf([]byte("another treatment"))}
	resolve, err := recorded.FromSuite(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	_, err = resolve(ctx, req)
	if !errors.Is(err, recorded.ErrNotInSuite) {
		t.Fatalf("resolve: %v, want ErrNotInSuite", err)
	}
	if got := fmt.Sprint(err); !containsAll(got, "fix-sum", demo) {
		t.Fatalf("error %q should name the case and the suite file", got)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
