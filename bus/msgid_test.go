package bus_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// storedMsgID reads the Nats-Msg-Id the stream holds at seq.
func storedMsgID(t *testing.T, b *bus.Bus, seq uint64) string {
	t.Helper()
	ctx := testCtx(t)
	st, err := b.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMsg(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	return m.Header.Get(jetstream.MsgIDHeader)
}

// A fact is stored under 22 characters of base64url (128 bits of the
// SHA-256 of the suite-scoped ID), however long the writer's ID and the
// suite are, and its writer still finds it by its own ID.
func TestAFactIsStoredUnderAFixedLengthMessageID(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	suite := "nightly-2025-06-" + strings.Repeat("x", 60)
	id := events.MessageID("a-rather-long-run-id-of-a-case-and-treatment-t1", events.KindTurnCompleted, "1")
	recs, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Turn(t, suite, "a-rather-long-run-id-of-a-case-and-treatment-t1", 1, 1), MsgID: id})
	if err != nil {
		t.Fatal(err)
	}
	stored := storedMsgID(t, b, recs[0].Seq)
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`).MatchString(stored) {
		t.Fatalf("stored under %q (%d bytes), want 22 characters of base64url", stored, len(stored))
	}
	if !recs[0].HasMsgID(id) || recs[0].HasMsgID(id+"x") {
		t.Errorf("the appended record %q does not answer to exactly its writer's ID %q", recs[0].MsgID, id)
	}
	log, err := b.LoadRun(ctx, suite, "a-rather-long-run-id-of-a-case-and-treatment-t1")
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := log.ByMsgID(id); !ok || r.Seq != recs[0].Seq || r.MsgID != recs[0].MsgID {
		t.Errorf("ByMsgID(%q) = %+v, %v; want the appended record", id, r, ok)
	}
	if _, ok := log.ByMsgID(stored + "/"); ok {
		t.Error("ByMsgID found a record under an ID nobody wrote")
	}
}

// A store written before message IDs were hashed holds them as the writer's
// ID scoped by the suite ("<suite>/<id>"), and before that unscoped: a
// writer still finds its facts there by its own ID, so a redelivered input
// does not append them again.
func TestAnOldStoresMessageIDsAreStillRecognised(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	first := bustest.Turn(t, "s", "r1", 1, 1)
	second := bustest.Turn(t, "s", "r1", 2, 2)
	for _, c := range []struct {
		f      events.Fact
		stored string
	}{{first, "r1/turn/1"}, {second, "s/r1/turn/2"}} {
		data, err := events.Encode(c.f)
		if err != nil {
			t.Fatal(err)
		}
		subj, err := c.f.Subject()
		if err != nil {
			t.Fatal(err)
		}
		m := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
		m.Header.Set(jetstream.MsgIDHeader, c.stored)
		if _, err := b.JetStream().PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	log, err := b.LoadRun(ctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r1/turn/1", "r1/turn/2"} {
		if _, ok := log.ByMsgID(id); !ok {
			t.Errorf("ByMsgID(%q) finds nothing in the old store", id)
		}
	}
	recs, err := b.Commit(ctx, nil, "s", "r1", func(bus.RunLog) ([]bus.Pending, error) {
		again := bustest.Turn(t, "s", "r1", 3, 2)
		return []bus.Pending{{Fact: again, MsgID: "r1/turn/2"}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || !recs[0].Duplicate || recs[0].Fact.ID != second.ID {
		t.Errorf("a redelivered decision over the old store committed %+v, want the stored fact as a duplicate", recs)
	}
}
