package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// stampedStep is one stored message of a turn: a fact's kind, or
// blob-meta / blob-chunk for the blob bucket's messages, with the server's
// timestamp.
type stampedStep struct {
	kind    string
	at      time.Time
	started bool // a turn.started
}

// blobSteps reads the blob bucket's messages with their timestamps.
func blobSteps(ctx context.Context, b *bus.Bus) ([]stampedStep, error) {
	c, err := b.JetStream().OrderedConsumer(ctx, "OBJ_"+bus.BlobBucket, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return nil, err
	}
	var out []stampedStep
	for range 1_000_000 {
		m, err := c.Next(jetstream.FetchMaxWait(200 * time.Millisecond))
		if err != nil {
			break // read to the end
		}
		md, err := m.Metadata()
		if err != nil {
			return nil, err
		}
		kind := "blob-chunk"
		if strings.HasPrefix(m.Subject(), "$O."+bus.BlobBucket+".M.") {
			kind = "blob-meta"
		}
		out = append(out, stampedStep{kind: kind, at: md.Timestamp})
	}
	return out, nil
}

// BenchmarkTurnBreakdown is B3 taken apart: each iteration runs one run
// of 50 turns through the five services, and the log gives the median
// time between consecutive stored messages of a turn (facts and the blob
// bucket's messages merged by the server's timestamps), from turn 3 on.
// It is where a turn's time goes beyond the raw chain
// (docs/benchmarks.md, items 15 and 23):
//
//	go test -run '^$' -bench TurnBreakdown -benchtime 3x -v ./bench/
func BenchmarkTurnBreakdown(b *testing.B) {
	for _, mode := range []bus.Durability{bus.SyncAlways, bus.SyncInterval} {
		b.Run(string(mode), func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			dir := b.TempDir()
			s, err := startServer(ctx, filepath.Join(dir, "store"), mode, true, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.close()
			stop, err := startServices(ctx, s.b, 4, 1, filepath.Join(dir, "work"), nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			gaps := map[string][]time.Duration{}
			var order []string
			var turns []time.Duration
			i := 0
			for b.Loop() {
				name := fmt.Sprintf("bd-%d", i)
				i++
				if err := submitSuite(ctx, s.b, filepath.Join(dir, "suites"), name, 1, 50); err != nil {
					b.Fatal(err)
				}
				if err := awaitReported(ctx, s.b, []string{name}, 2*time.Minute); err != nil {
					b.Fatal(err)
				}
				facts, err := readStamped(ctx, s.b, events.SuiteFilter(name))
				if err != nil {
					b.Fatal(err)
				}
				turns = append(turns, turnLatencies(facts)...)
				blobs, err := blobSteps(ctx, s.b)
				if err != nil {
					b.Fatal(err)
				}
				var steps []stampedStep
				for _, f := range facts {
					_, started := f.f.Body.(events.TurnStarted)
					steps = append(steps, stampedStep{kind: string(f.f.Kind()), at: f.at, started: started})
				}
				first, last := facts[0].at, facts[len(facts)-1].at
				for _, m := range blobs {
					if m.at.After(first) && m.at.Before(last) {
						steps = append(steps, m)
					}
				}
				sort.SliceStable(steps, func(i, j int) bool { return steps[i].at.Before(steps[j].at) })
				turn := 0
				for j := 1; j < len(steps); j++ {
					if steps[j].started {
						turn++
					}
					if turn < 3 { // the run's start, and its first request stored whole
						continue
					}
					k := steps[j-1].kind + " -> " + steps[j].kind
					if _, ok := gaps[k]; !ok {
						order = append(order, k)
					}
					gaps[k] = append(gaps[k], steps[j].at.Sub(steps[j-1].at))
				}
			}
			b.ReportMetric(float64(percentile(turns, 50))/float64(time.Millisecond), "p50-turn-ms")
			for _, k := range order {
				d := slices.Clone(gaps[k])
				if len(d) < 10 { // the run's end
					continue
				}
				slices.Sort(d)
				b.Logf("%-45s n=%4d p25 %9v p50 %9v p75 %9v", k, len(d), percentile(d, 25), percentile(d, 50), percentile(d, 75))
			}
		})
	}
}
