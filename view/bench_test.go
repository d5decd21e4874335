package view_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/view"
)

// fillWindow bounds the publishes in flight while a benchmark fills its
// store.
const fillWindow = 2000

// fillSuites writes suites × runsPer settled attempts to b: each suite is
// submitted (cases × 2 treatments × trials), and each of its runs is
// requested, claimed, ended and graded, with every third one failing.
// It returns the number of facts written.
func fillSuites(tb testing.TB, ctx context.Context, b *bus.Bus, suites, cases, trials int) int {
	tb.Helper()
	js, err := jetstream.New(b.Conn(), jetstream.WithPublishAsyncMaxPending(fillWindow))
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	publish := func(suite, run string, gen uint32, pos uint64, owner events.Owner, body events.Body) {
		f, err := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: gen, Position: pos,
			Producer: events.Producer{Service: owner, Instance: "bench"}}, body)
		if err != nil {
			tb.Fatal(err)
		}
		data, err := events.Encode(f)
		if err != nil {
			tb.Fatal(err)
		}
		subj, _ := f.Subject()
		if _, err := js.PublishMsgAsync(&nats.Msg{Subject: subj, Data: data}, jetstream.WithMsgID(f.ID.String())); err != nil {
			tb.Fatal(err)
		}
		n++
	}
	d := events.DigestOf([]byte("bench"))
	tokens := uint64(1200)
	for s := range suites {
		name := fmt.Sprintf("load-%03d", s)
		sub := events.SuiteSubmitted{Name: name, SpecDigest: d, Trials: uint32(trials),
			Treatments: []events.Ref{{ID: "on", Digest: d}, {ID: "off", Digest: d}}}
		for c := range cases {
			sub.Cases = append(sub.Cases, events.Ref{ID: fmt.Sprintf("case-%03d", c), Digest: d})
		}
		publish(name, events.SuiteScope, 0, 1, events.OwnerSubmitter, sub)
		i := 0
		for m := range measure.Members(sub) {
			i++
			result := events.VerdictOK()
			if i%3 == 0 {
				result = events.VerdictFail()
			}
			snap := events.DigestOf([]byte(m.Run))
			publish(name, m.Run, 1, 1, events.OwnerMeter, events.RunRequested{Case: m.Case, CaseDigest: d, Treatment: m.Treatment, TreatmentDigest: d, Trial: m.Trial,
				Components: []events.Component{{Name: "stall", Value: m.Treatment}}})
			publish(name, m.Run, 1, 2, events.OwnerRunner, events.RunClaimed{Runner: "bench", Lease: 1})
			publish(name, m.Run, 1, 3, events.OwnerRunner, events.RunEnded{Status: events.RunDone, Reason: "bench", Steps: 2,
				Spent: events.Spent{Steps: 2, Tokens: &tokens, Millis: 40}, LastEvidence: []events.EvidenceRef{"t1/c1"}})
			publish(name, m.Run, 1, 4, events.OwnerRunner, events.CandidateSealed{SnapshotDigest: snap, Files: 1})
			publish(name, m.Run, 1, 5, events.OwnerGrader, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: m.Run, SnapshotID: snap, Revision: 1, Result: result}})
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		tb.Fatalf("fill: %v", ctx.Err())
	}
	return n
}

// BenchmarkSuitesPage renders the suites page of a store holding 10,000
// settled runs, over loopback HTTP: "100x100" is a hundred suites of a
// hundred runs, "1x10000" one suite of ten thousand. "first" is the first
// render after the viewer has folded the log (every suite's report built);
// "again" a render with the reports current (what a page that refreshes
// costs while nothing moved); "suite-page" renders the first suite's page
// for scale. Run it with
//
//	go test -run '^$' -bench BenchmarkSuitesPage -benchtime 5x ./view/
func BenchmarkSuitesPage(b *testing.B) {
	for _, shape := range []struct {
		name                  string
		suites, cases, trials int
	}{
		{"100x100", 100, 10, 5},
		{"1x10000", 1, 100, 50},
	} {
		b.Run(shape.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			bs, _ := bustest.Start(b)
			facts := fillSuites(b, ctx, bs, shape.suites, shape.cases, shape.trials)
			last := lastSeq(b, ctx, bs)
			if int(last) != facts {
				b.Fatalf("the store holds %d messages, %d were written", last, facts)
			}
			b.Run("first", func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					s, h := serve(b, view.Config{Bus: bs})
					if err := s.WaitThrough(ctx, last); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					mustGet(b, h.URL+"/suites")
				}
			})
			b.Run("again", func(b *testing.B) {
				s, h := serve(b, view.Config{Bus: bs})
				if err := s.WaitThrough(ctx, last); err != nil {
					b.Fatal(err)
				}
				mustGet(b, h.URL+"/suites")
				for b.Loop() {
					mustGet(b, h.URL+"/suites")
				}
			})
			// For scale: the page of the largest suite (its report, grid
			// and run list), rendered with the report current.
			b.Run("suite-page", func(b *testing.B) {
				s, h := serve(b, view.Config{Bus: bs})
				if err := s.WaitThrough(ctx, last); err != nil {
					b.Fatal(err)
				}
				mustGet(b, h.URL+"/suites/load-000")
				for b.Loop() {
					mustGet(b, h.URL+"/suites/load-000")
				}
			})
		})
	}
}

// mustGet fetches a page that must be there and be complete.
func mustGet(b *testing.B, url string) {
	b.Helper()
	status, body := get(b, url)
	if status != http.StatusOK || len(body) < 1000 {
		b.Fatalf("%s: %d, %d bytes", url, status, len(body))
	}
}
