package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
)

// storeFacts reads a suite's facts from a store no process holds, in
// log order.
func storeFacts(t *testing.T, store, suite string) []events.Fact {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, done := openStoreBus(ctx, t, store)
	defer done()
	var out []events.Fact
	if _, err := b.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter(suite)}, func(r bus.Raw) error {
		f, err := r.Fact()
		if err != nil {
			return err
		}
		out = append(out, f)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkRequests asserts that each of planned runs was requested once and
// that at no point of the log were more than window runs requested and
// not ended.
func checkRequests(t *testing.T, facts []events.Fact, window, planned int) {
	t.Helper()
	seen := map[string]bool{}
	requested, ended, most := 0, 0, 0
	for _, f := range facts {
		switch f.Body.(type) {
		case events.RunRequested:
			if seen[f.Run] {
				t.Errorf("%s requested twice", f.Run)
			}
			seen[f.Run] = true
			requested++
		case events.RunEnded:
			ended++
		}
		most = max(most, requested-ended)
	}
	if requested != planned || ended != planned {
		t.Errorf("%d runs requested and %d ended, want %d of each", requested, ended, planned)
	}
	if most > window {
		t.Errorf("up to %d runs requested and not ended at once; the window is %d", most, window)
	}
}

// 'factline run' SIGKILLed mid-suite, its meter with it, and run again on
// its store: the second process requests exactly the runs the first did
// not, each once, never more than the window ahead of the runs ended; the
// suite is reported whole, as a run never killed reports it, and the
// store passes the audit.
func TestAKilledRunRequestsTheRestOfItsSuiteOnce(t *testing.T) {
	t.Parallel()
	const trials, window = 40, 4
	suite := writeTrialsSuite(t, trials)
	// Each reply takes a while, so that the runs cannot all end between
	// two progress lines (at most one a second): on a quiet machine the
	// 40 instant runs ended within 0.6 s, before the kill, and the test
	// proved nothing.
	slow := "turns:\n  - text: Done.\n    delay: 200ms\n    usage: {input_tokens: 10, output_tokens: 2, cost: 1}\n"
	if err := os.WriteFile(filepath.Join(filepath.Dir(suite), "s", "c.yaml"), []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir() + "/store"
	args := []string{"run", suite, "--store", store, "--fsync", "interval", "--json", "--request-window", strconv.Itoa(window)}
	// The uninterrupted run the resumed one is compared with shares
	// nothing with it but the suite: it runs meanwhile, since the run
	// after the kill mostly waits (the runs the killed process had in
	// flight come back after the consumer's ack wait, 30 s).
	whole := startFactline(t, "run", suite, "--store", t.TempDir()+"/store", "--fsync", "interval", "--json", "--request-window", strconv.Itoa(window))
	first := startFactline(t, args...)
	testutil.Within(t, 2*time.Minute, "a third of the runs ended", func() bool {
		m := progressLine.FindAllStringSubmatch(first.errOut.String(), -1)
		if len(m) == 0 {
			return false
		}
		n, _ := strconv.Atoi(m[len(m)-1][3])
		return n >= trials/3
	})
	first.kill(t)
	if facts := storeFacts(t, store, "mem"); len(facts) == 0 {
		t.Fatal("the killed run left no facts")
	} else {
		requested := 0
		for _, f := range facts {
			if _, ok := f.Body.(events.RunRequested); ok {
				requested++
			}
		}
		if requested == trials {
			t.Fatalf("the killed run had requested every run: the test would prove nothing")
		}
	}
	code, again, errOut := factline(t, args...)
	if code != 0 {
		t.Fatalf("run again: exit %d\n%s", code, errOut)
	}
	checkReport(t, "run again", again, "mem", trials)
	checkRequests(t, storeFacts(t, store, "mem"), window, trials)
	if code, out, errOut := factline(t, "audit", "--store", store); code != 0 {
		t.Fatalf("audit: %d\n%s\n%s", code, out, errOut)
	}

	if code := whole.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("the uninterrupted run: exit %d\n%s", code, whole.errOut.String())
	}
	if a, b := normaliseReport(t, again), normaliseReport(t, whole.out.String()); a != b {
		t.Fatalf("the report after the kill differs from an uninterrupted run's:\n%s\n%s", a, b)
	}
}

// normaliseReport drops what no two runs share (wall times) from a JSON
// report.
func normaliseReport(t *testing.T, report string) string {
	t.Helper()
	return testutil.ReportWithoutWallTimes(t, []byte(report))
}
