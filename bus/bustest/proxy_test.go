package bustest_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// behindProxy starts a server with a stream on "t.>" and a JetStream
// client that reaches it only through a proxy whose acknowledgements of
// "t.>" are logged. The stream returned is read on a connection of its
// own, around the proxy.
func behindProxy(t *testing.T) (*bustest.Proxy, *bustest.AckLog, *nats.Conn, jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	srv := bustest.Server(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	acks := bustest.NewAckLog(func(s string) bool { return strings.HasPrefix(s, "t.") })
	p := bustest.StartProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"), acks)
	nc, err := nats.Connect(p.URL(), nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	direct, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	djs, err := jetstream.New(direct)
	if err != nil {
		t.Fatal(err)
	}
	s, err := djs.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	return p, acks, nc, js, s
}

func stored(t *testing.T, s jetstream.Stream) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// Every acknowledgement passing the proxy is logged with the sequence the
// server named and the message as it was published.
func TestProxyLogsEveryAcknowledgement(t *testing.T) {
	_, acks, _, js, _ := behindProxy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, data := range []string{"one", "two", "one"} {
		ack, err := js.Publish(ctx, "t.a", []byte(data), jetstream.WithMsgID(data))
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		got := acks.Acks()
		if len(got) != i+1 {
			t.Fatalf("after %d publishes the log has %d acknowledgements", i+1, len(got))
		}
		a := got[i]
		if a.Seq != ack.Sequence || a.Stream != "T" || string(a.Data) != data || a.Subject != "t.a" || a.MsgID() != data || a.Duplicate != ack.Duplicate {
			t.Fatalf("logged %+v (msg id %q) for the answer %+v to %q", a, a.MsgID(), ack, data)
		}
	}
	if !acks.Acks()[2].Duplicate {
		t.Fatal("the third publish repeats the first's message ID: its acknowledgement is a duplicate")
	}
}

// A hold passes nothing either way, keeps the connection, and lets what it
// held go on at Heal.
func TestProxyHoldKeepsTheConnectionAndPassesNothing(t *testing.T) {
	p, _, nc, js, s := behindProxy(t)
	p.Hold()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err := js.Publish(ctx, "t.held", []byte("x"))
	cancel()
	if err == nil {
		t.Fatal("a publish through a held proxy was acknowledged")
	}
	if !nc.IsConnected() {
		t.Fatal("the client lost its connection while held; a hold keeps it")
	}
	p.Heal()
	deadline := time.Now().Add(10 * time.Second)
	for stored(t, s) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the held publish was never stored after Heal")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A drop closes the client's connection and refuses it until Heal.
func TestProxyDropClosesAndRefusesUntilHeal(t *testing.T) {
	p, _, nc, js, _ := behindProxy(t)
	p.Drop()
	deadline := time.Now().Add(5 * time.Second)
	for nc.IsConnected() {
		if time.Now().After(deadline) {
			t.Fatal("the client is still connected after a drop")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // several reconnect attempts
	if nc.IsConnected() {
		t.Fatal("the client reconnected through a dropped proxy")
	}
	p.Heal()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, "t.after", []byte("x")); err != nil {
		t.Fatalf("publish after Heal: %v", err)
	}
}

// A hold placed by OnPublish right after a publish passed: the server
// stores the message, and its acknowledgement is what is held (and still
// logged: the server gave it).
func TestProxyHoldRightAfterAPublish(t *testing.T) {
	p, acks, _, js, s := behindProxy(t)
	var seen atomic.Int32
	p.OnPublish(func(pub bustest.Publish) func() {
		if pub.Subject != "t.intent" {
			return nil
		}
		seen.Add(1)
		return p.Hold
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err := js.Publish(ctx, "t.intent", []byte("x"))
	cancel()
	if err == nil {
		t.Fatal("the acknowledgement came through a proxy held right after the publish")
	}
	if seen.Load() != 1 {
		t.Fatalf("OnPublish saw the publish %d times", seen.Load())
	}
	if n := stored(t, s); n != 1 {
		t.Fatalf("the server stored %d messages, want the one published before the hold", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(acks.Acks()) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the server's acknowledgement was never logged")
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Heal()
}

// A hold placed by OnPublish before the publish passes: the server has
// nothing until Heal.
func TestProxyHoldBeforeAPublish(t *testing.T) {
	p, _, _, js, s := behindProxy(t)
	p.OnPublish(func(pub bustest.Publish) func() {
		if pub.Subject == "t.settle" {
			p.Hold()
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err := js.Publish(ctx, "t.settle", []byte("x"))
	cancel()
	if err == nil {
		t.Fatal("a publish held before it passed was acknowledged")
	}
	if n := stored(t, s); n != 0 {
		t.Fatalf("the server stored %d messages before Heal", n)
	}
	p.OnPublish(nil)
	p.Heal()
	deadline := time.Now().Add(10 * time.Second)
	for stored(t, s) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the held publish was never stored after Heal")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// LoseAnswers lets the client's publish reach the server and throws its
// answer away; the connection stays, and answers come again after Heal.
func TestProxyLoseAnswersPassesRequestsAndLosesTheirAnswers(t *testing.T) {
	p, _, nc, js, s := behindProxy(t)
	p.LoseAnswers()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err := js.Publish(ctx, "t.lost", []byte("x"))
	cancel()
	if err == nil {
		t.Fatal("an answer came through a proxy that loses them")
	}
	if n := stored(t, s); n != 1 {
		t.Fatalf("the server stored %d messages, want the one whose answer was lost", n)
	}
	if !nc.IsConnected() {
		t.Fatal("the client lost its connection; losing answers keeps it")
	}
	p.Heal()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, "t.after", []byte("x")); err != nil {
		t.Fatalf("publish after Heal: %v", err)
	}
}
