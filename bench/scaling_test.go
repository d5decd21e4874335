package bench

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// A miniature of the scaling benchmark on a real three-node loopback
// cluster: every append of every point is acknowledged, the mapping
// spreads the suites over all of a point's streams, and the leaders sit
// where the point says.
func TestScalingSpreadsSuitesOverPartitionsWithLeadersPlaced(t *testing.T) {
	ctx := testCtx(t)
	points := []ScalingPoint{{Streams: 1}, {Streams: 3}, {Streams: 3, OneLeader: true}}
	samples, err := RunScaling(ctx, ScalingConfig{Dir: t.TempDir(), Modes: []bus.Durability{bus.SyncInterval},
		Points: points, Reps: 1, Runs: 30, Rounds: 3, Limit: 2 * time.Minute, Publishers: 3, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != len(points) {
		t.Fatalf("%d samples, want %d", len(samples), len(points))
	}
	for _, s := range samples {
		if s.Facts != 90 || s.Rate() <= 0 {
			t.Errorf("%s: %d facts at %v/s, want 90", s.Point, s.Facts, s.Rate())
		}
		if len(s.PerStream) != s.Point.Streams {
			t.Errorf("%s: facts landed in %v, want all %d streams", s.Point, s.PerStream, s.Point.Streams)
		}
		distinct := map[string]bool{}
		for _, l := range s.Leaders {
			distinct[l] = true
		}
		want := min(s.Point.Streams, scalingNodes)
		if s.Point.OneLeader {
			want = 1
		}
		if len(distinct) != want {
			t.Errorf("%s: leaders %v, want %d distinct", s.Point, s.Leaders, want)
		}
	}
}

// A partitioned stream keeps factline's fence: its transform stores the
// unmapped subject, so the run-wide expected-sequence filter writers send
// sees the run's facts, and a stale writer's append is rejected.
func TestPartitionedStreamRejectsAStaleAppend(t *testing.T) {
	ctx := testCtx(t)
	nodes, err := startScalingCluster(ctx, filepath.Join(t.TempDir(), "c"), bus.SyncInterval, []int{2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, n := range nodes {
			n.Shutdown()
		}
	}()
	nc, err := nats.Connect(nodes[1].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := awaitMetaLeader(ctx, js); err != nil {
		t.Fatal(err)
	}
	if _, err := makePartitions(ctx, js, nc, nodes, 2); err != nil {
		t.Fatal(err)
	}
	appendAt := func(ctx context.Context, expect uint64, id string) (*jetstream.PubAck, error) {
		m := &nats.Msg{Subject: "s2.suite-a.run.turn.completed", Data: []byte("x"), Header: nats.Header{}}
		m.Header.Set(jetstream.MsgIDHeader, id)
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, fmt.Sprint(expect))
		m.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, "s2.suite-a.run.>")
		return js.PublishMsg(ctx, m)
	}
	first, err := appendAt(ctx, 0, "1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := appendAt(ctx, first.Sequence, "2"); err != nil {
		t.Fatalf("append after %d: %v", first.Sequence, err)
	}
	_, err = appendAt(ctx, first.Sequence, "3")
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
		t.Fatalf("stale append: %v, want wrong last sequence", err)
	}
	// The partition is nats-server's FNV-1a (32 bits) of the suite token
	// modulo the count: a client can name a suite's stream without asking
	// (for direct gets and reads), and a server whose hash changed would
	// fail here.
	for i := range 40 {
		suite := fmt.Sprintf("suite-%d", i)
		m := &nats.Msg{Subject: "s2." + suite + ".run.turn.completed", Data: []byte("x")}
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		h := fnv.New32a()
		h.Write([]byte(suite))
		if want := partitionStream(2, int(h.Sum32()%2)); ack.Stream != want {
			t.Fatalf("suite %s landed in %s, FNV-1a says %s", suite, ack.Stream, want)
		}
	}
	st, err := js.Stream(ctx, first.Stream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(ctx, "s2.suite-a.run.>")
	if err != nil || m.Subject != "s2.suite-a.run.turn.completed" {
		t.Fatalf("stored under %v (%v), want the unmapped subject", m, err)
	}
}

// The production form of the design on one server: a mapping of the whole
// fact.<suite>.<run>.> space (a destination ending in ">") into two
// partitions whose transforms store the unmapped subjects. What factline
// relies on inside FACTS keeps working in each partition: a durable
// consumer filtered by kind (events.KindFilter) receives the fact under
// its own subject, and FACTS' republish rule, unchanged, announces each
// stored stop decision on stored.fact.<suite>.<run>.stop.decided.
func TestPartitionedStreamKeepsKindFiltersAndTheStoredWake(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "mappings.conf")
	mapping := `mappings = { "fact.*.*.>": "factp.{{partition(2,1)}}.{{wildcard(1)}}.{{wildcard(2)}}.>" }` + "\n"
	if err := os.WriteFile(conf, []byte(mapping), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: filepath.Join(dir, "store"), ConfigFile: conf, Durability: bus.SyncInterval})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	wake := &jetstream.RePublish{Source: "fact.*.*." + string(events.KindStopDecided),
		Destination: bus.StoredPrefix + ".fact.{{wildcard(1)}}.{{wildcard(2)}}." + string(events.KindStopDecided), HeadersOnly: true}
	for i := range 2 {
		src := fmt.Sprintf("factp.%d.>", i)
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: partitionStream(2, i), Subjects: []string{src},
			SubjectTransform: &jetstream.SubjectTransformConfig{Source: src, Destination: "fact.>"}, RePublish: wake}); err != nil {
			t.Fatalf("partition %d: %v", i, err)
		}
	}
	wakes, err := nc.SubscribeSync(bus.StoredPrefix + ".>")
	if err != nil {
		t.Fatal(err)
	}
	streams := map[string]bool{}
	for i := range 8 {
		subject := fmt.Sprintf("fact.suite-%d.run-1.%s", i, events.KindStopDecided)
		ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		streams[ack.Stream] = true
		w, err := wakes.NextMsg(5 * time.Second)
		if err != nil || w.Subject != bus.StoredPrefix+"."+subject {
			t.Fatalf("wake for %s: %v %v", subject, w, err)
		}
		c, err := js.CreateOrUpdateConsumer(ctx, ack.Stream, jetstream.ConsumerConfig{Durable: "decider",
			FilterSubjects: []string{events.KindFilter(events.KindStopDecided)}, AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			t.Fatalf("consumer on %s: %v", ack.Stream, err)
		}
		batch, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for m := range batch.Messages() {
			got = m.Subject()
			_ = m.Ack()
		}
		if got != subject {
			t.Fatalf("consumer on %s got %q, want %s", ack.Stream, got, subject)
		}
	}
	if len(streams) != 2 {
		t.Fatalf("8 suites landed in %v, want both partitions", streams)
	}
}
