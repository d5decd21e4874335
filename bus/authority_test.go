package bus_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// A server configuration with an administrator and an identity that may
// only look streams up and read, written for a standalone nats-server
// (its own client and monitoring ports), which StartEmbedded must not use.
const authorityConf = `
listen: 127.0.0.1:4222
http: 127.0.0.1:8222
accounts {
  T: {
    jetstream: enabled
    users: [
      {user: admin, password: admin-pw}
      {user: reader, password: reader-pw, permissions: {
        publish: ["$JS.API.STREAM.INFO.*", "$JS.API.DIRECT.GET.>"]
        subscribe: ["_INBOX.>"]
      }}
    ]
  }
}
`

// An identity that may not create streams opens a bus an administrator set
// up, and on an account nobody set up it is told so (ErrNotSetUp) instead
// of waiting on an answer the server never sends.
func TestOpenAsAnIdentityThatMayNotCreate(t *testing.T) {
	defer bus.SetCreateTimeout(2 * time.Second)()
	ctx := testCtx(t)
	conf := filepath.Join(t.TempDir(), "server.conf")
	if err := os.WriteFile(conf, []byte(authorityConf), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := bustest.Server(t, bus.EmbeddedConfig{ConfigFile: conf, Listen: "127.0.0.1:-1"})
	if url := srv.ClientURL(); strings.HasSuffix(url, ":4222") {
		t.Fatalf("the file's listen address was used: %s", url)
	}
	if srv.Server().MonitorAddr() != nil {
		t.Fatalf("the file's monitoring port was opened: %v", srv.Server().MonitorAddr())
	}
	connect := func(user, pw string) *nats.Conn {
		nc, err := srv.Connect(nats.UserInfo(user, pw))
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	if nc, err := nats.Connect(srv.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("connected without credentials to a server that demands them")
	}

	_, err := bus.Open(ctx, connect("reader", "reader-pw"), bus.Config{})
	if !errors.Is(err, bus.ErrNotSetUp) || !strings.Contains(err.Error(), bus.FactsStream) {
		t.Fatalf("open as reader on an empty account: %v", err)
	}
	if _, err := bus.Open(ctx, connect("admin", "admin-pw"), bus.Config{}); err != nil {
		t.Fatalf("open as admin: %v", err)
	}
	reader, err := bus.Open(ctx, connect("reader", "reader-pw"), bus.Config{})
	if err != nil {
		t.Fatalf("open as reader once set up: %v", err)
	}
	if log, err := reader.LoadRun(ctx, "s1", "r1"); err != nil || len(log.Records) != 0 {
		t.Fatalf("reader loads a run: %d facts, %v", len(log.Records), err)
	}
}
