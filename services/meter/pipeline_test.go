package meter_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/suites"
)

// countRequested counts suite m's run.requested facts in the log.
func countRequested(t testing.TB, ctx context.Context, b *bus.Bus) int {
	t.Helper()
	n := 0
	_, err := b.Read(ctx, bus.ReadOptions{Filter: events.FactPrefix + ".m.*." + string(events.KindRunRequested)}, func(bus.Raw) error {
		n++
		return nil
	})
	must(t, err)
	return n
}

// A meter whose connection goes dead in the middle of a window's
// pipelined requests (the server has stored the first 300 of 1,000; it
// answers none of them and gets none of the rest), and that is stopped
// there, leaves the suite to the next meter, which requests the 700 runs
// not requested, each once, and none of the 300 again.
func TestAMeterStoppedMidExpansionRequestsNothingTwice(t *testing.T) {
	_, srv := bustest.StartWith(t, bus.EmbeddedConfig{Durability: bus.SyncInterval, Listen: "127.0.0.1:-1"})
	b := bustest.OpenWith(t, srv, bus.Config{})
	proxy := bustest.StartProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b1, err := bus.Dial(ctx, proxy.URL(), bus.Config{})
	must(t, err)
	t.Cleanup(b1.Conn().Close)

	const landed = 300
	var requests atomic.Int64
	proxy.OnPublish(func(p bustest.Publish) func() {
		if !strings.HasSuffix(p.Subject, "."+string(events.KindRunRequested)) || requests.Add(1) != landed {
			return nil
		}
		return proxy.Hold // the server has this one; its answer and all after wait
	})
	p := publishTrials(t, ctx, b, 250)
	roster := measure.Roster(p.Submitted)
	must(t, suites.Submit(ctx, b, p, "test"))
	// Both agree on the consumer's ack wait: the delivery the dead meter
	// held comes back to the next one within it.
	ack := kit.WithAckWait(3 * time.Second)
	stop := runMeterAs(t, ctx, b1, "m-1", meter.WithRequestWindow(len(roster)), ack)
	testutil.Until(ctx, t, "the first requests stored", func() bool { return countRequested(t, ctx, b) == landed })
	stop()
	proxy.Drop()
	if n := countRequested(t, ctx, b); n != landed {
		t.Fatalf("%d runs requested once the meter stopped, want %d", n, landed)
	}

	runMeterAs(t, ctx, b, "m-2", meter.WithRequestWindow(len(roster)), ack)
	testutil.Until(ctx, t, "every run requested", func() bool { return countRequested(t, ctx, b) >= len(roster) })
	by := checkWindow(t, suiteFacts(t, ctx, b), len(roster), roster)
	for i, m := range roster {
		want := "m-2"
		if i < landed {
			want = "m-1"
		}
		if by[m.Run] != want {
			t.Errorf("%s (attempt %d) requested by %q, want %q", m.Run, i, by[m.Run], want)
		}
	}
}

// BenchmarkRequestTenThousandRuns times the meter requesting a window of
// 10,000 runs (a 10,000-run suite with a window as large) on an embedded
// server with fsync interval: the requests are pipelined, not each
// waiting for its answer (docs/benchmarks.md#suite-size).
//
//	go test -run '^$' -bench BenchmarkRequestTenThousandRuns -benchtime 3x ./services/meter/
func BenchmarkRequestTenThousandRuns(b *testing.B) {
	const runs = 10_000
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		bs, _ := bustest.Start(b)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		p := publishTrials(b, ctx, bs, runs/4)
		must(b, suites.Submit(ctx, bs, p, "bench"))
		sub, err := bs.LoadRun(ctx, "m", events.SuiteScope)
		must(b, err)
		m := kittest.Must(meter.New(bs, meter.WithRequestWindow(runs), kit.WithLogger(slog.New(slog.DiscardHandler))))
		b.StartTimer()
		before := cpuTime(b)
		must(b, m.Expand(ctx, sub.Records[0].Fact, p.Submitted))
		cpu += cpuTime(b) - before
		b.StopTimer()
		if n := countRequested(b, ctx, bs); n != runs {
			b.Fatalf("%d runs requested, want %d", n, runs)
		}
		cancel()
		b.StartTimer()
	}
	b.ReportMetric(float64(runs)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
	// The process's CPU (the server's and the meter's): on a shared
	// machine, what the requests cost whatever else runs on it.
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
