package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
)

// A service started without --replicas 3 on a cluster set up with three
// (the flag forgotten on one command line) was refused with "stream FACTS
// exists with replicas = 3, factline needs 1 (fix or remove the stream;
// factline will not change it silently)": it blamed the stream and
// offered to remove the log, when the command was what to fix. The
// refusal must name the flag that joins the streams as they are, and not
// suggest removing a stream that holds the log. The other way round (the
// streams made with one replica, a command given 3) it says both ways on:
// the flag that uses them as they are, or, before any work, setup anew.
func TestAReplicasMismatchSaysWhatToGiveTheCommand(t *testing.T) {
	_, nodes := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := nodes[0].ClientURL() + "," + nodes[1].ClientURL() + "," + nodes[2].ClientURL()
	_, err := bus.Dial(ctx, url, bus.Config{})
	if err == nil {
		t.Fatal("a bus with one replica opened over three-replica streams")
	}
	msg := err.Error()
	for _, want := range []string{"replicas = 3", "--replicas 3"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "remove the stream") {
		t.Errorf("the refusal %q suggests removing the log when the command lacks a flag", msg)
	}

	single, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: t.TempDir(), Durability: bus.SyncInterval, Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(single.Shutdown)
	one, err := bus.Dial(ctx, single.ClientURL(), bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	one.Conn().Close()
	_, err = bus.Dial(ctx, single.ClientURL(), bus.Config{Replicas: 3})
	if err == nil {
		t.Fatal("a bus with three replicas opened over one-replica streams")
	}
	msg = err.Error()
	for _, want := range []string{"replicas = 1", "--replicas 1", "before any work", "setup"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal %q does not say %q", msg, want)
		}
	}
}
