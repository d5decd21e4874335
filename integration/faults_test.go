//go:build faults

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/audit"
	"github.com/factline/factline/services/decider"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/runner"
	"github.com/factline/factline/services/staller"
	"github.com/factline/factline/suites"
)

// startServices runs all five services on b until ctx ends.
func startServices(t *testing.T, ctx context.Context, b *bus.Bus) {
	t.Helper()
	rn, err := runner.New(runner.Config{Bus: b, Workspaces: runner.StoredWorkspaces{Blobs: b}, Models: runner.Models,
		WorkDir: t.TempDir(), Concurrency: 4, AckWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runs := []func(context.Context) error{rn.Run, staller.New(b).Run, decider.New(b).Run, grader.New(b, grader.WithWorkDir(t.TempDir())).Run, meter.New(b).Run}
	stopped := make(chan struct{}, len(runs))
	for _, run := range runs {
		go func() { _ = run(ctx); stopped <- struct{}{} }()
	}
	t.Cleanup(func() {
		for range runs {
			<-stopped
		}
	})
}

// suiteFacts reads every fact of a suite.
func suiteFacts(t *testing.T, ctx context.Context, b *bus.Bus, suite string) []events.Fact {
	t.Helper()
	var out []events.Fact
	if _, err := b.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter(suite)}, func(r bus.Raw) error {
		f, err := events.Decode(r.Data)
		if err != nil {
			t.Fatalf("message %d: %v", r.Seq, err)
		}
		out = append(out, f)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Kill the node that leads the FACTS stream in a three-node cluster while
// the demo suite runs: the services ride out the election, the suite is
// measured, every run ends honestly and the log passes the audit.
func TestSuiteSurvivesLosingTheStreamLeader(t *testing.T) {
	b, nodes := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	startServices(t, ctx, b)
	defer cancel()
	s, err := suites.Load("../examples/demo/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := suites.Publish(ctx, b, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := suites.Submit(ctx, b, pub, "fault-test"); err != nil {
		t.Fatal(err)
	}
	ended := func() int {
		n := 0
		for _, f := range suiteFacts(t, ctx, b, "demo") {
			if f.Kind() == events.KindRunEnded {
				n++
			}
		}
		return n
	}
	for ended() < 6 {
		if ctx.Err() != nil {
			t.Fatal("no runs ended before the fault")
		}
		time.Sleep(100 * time.Millisecond)
	}
	info, err := b.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	leader := info.CachedInfo().Cluster.Leader
	killed := false
	for _, n := range nodes {
		if n.Server().Name() == leader {
			n.Shutdown()
			killed = true
		}
	}
	if !killed {
		t.Fatalf("no node named %q leads FACTS", leader)
	}
	t.Logf("killed %s, the FACTS leader, after %d runs ended", leader, ended())

	deadline := time.Now().Add(4 * time.Minute)
	for {
		log, err := b.LoadRun(ctx, "demo", events.SuiteScope)
		if err == nil {
			reported := false
			for _, f := range log.Facts() {
				reported = reported || f.Kind() == events.KindSuiteReported
			}
			if reported {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the suite was not measured after losing the leader (%d runs ended)", ended())
		}
		time.Sleep(200 * time.Millisecond)
	}
	facts := suiteFacts(t, ctx, b, "demo")
	if vs := audit.Check(facts, audit.Options{Finished: true}); len(vs) > 0 {
		t.Fatalf("the audit found %d violations, first: %v", len(vs), vs[0])
	}
	for _, f := range facts {
		if e, ok := f.Body.(events.RunEnded); ok && e.Status == events.RunErrored {
			t.Errorf("%s ended errored: %s", f.Run, e.Reason)
		}
	}
}
