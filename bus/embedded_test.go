package bus_test

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// A listen address without a host binds loopback, not every interface.
func TestBarePortListensOnLoopbackOnly(t *testing.T) {
	srv := bustest.Server(t, bus.EmbeddedConfig{Listen: ":-1"})
	addr, ok := srv.Server().Addr().(*net.TCPAddr)
	if !ok || !addr.IP.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("listening on %v, want 127.0.0.1 only", srv.Server().Addr())
	}
	if u := srv.ClientURL(); !strings.HasPrefix(u, "nats://127.0.0.1:") {
		t.Fatalf("client URL %q", u)
	}
}

// A cluster route address without a host binds loopback too: a node's
// routes carry every stream's data, and nothing asked to serve them to the
// network.
func TestBareClusterPortListensOnLoopbackOnly(t *testing.T) {
	srv := bustest.Server(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1", Name: "solo",
		Cluster: &bus.ClusterConfig{Name: "c", Listen: ":-1"}})
	addr := srv.Server().ClusterAddr()
	if addr == nil || !addr.IP.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("routes listen on %v, want 127.0.0.1 only", addr)
	}
}

// With ClientSeed the server admits only the holder of the seed, over TCP
// and in-process; Connect proves it without being told.
func TestClientSeedIsRequiredOfEveryClient(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	b, srv := bustest.StartWith(t, bus.EmbeddedConfig{Durability: bus.SyncInterval, Listen: "127.0.0.1:-1", ClientSeed: seed})
	if _, err := b.JetStream().AccountInfo(testCtx(t)); err != nil {
		t.Fatalf("the in-process connection cannot use JetStream: %v", err)
	}

	if nc, err := nats.Connect(srv.ClientURL()); err == nil || !errors.Is(err, nats.ErrAuthorization) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("a TCP client without the seed: %v, want an authorization violation", err)
	}
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	wrong, err := bus.ClientAuth(otherSeed)
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(srv.ClientURL(), wrong); !errors.Is(err, nats.ErrAuthorization) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("a TCP client with another user's seed: %v, want an authorization violation", err)
	}
	right, err := bus.ClientAuth(seed)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.ClientURL(), right)
	if err != nil {
		t.Fatalf("a TCP client with the seed: %v", err)
	}
	nc.Close()
	if _, err := bus.ClientAuth([]byte("not a seed")); err == nil {
		t.Fatal("a bad seed was accepted")
	}
	account, _ := nkeys.CreateAccount()
	accountSeed, _ := account.Seed()
	if _, err := bus.ClientAuth(accountSeed); err == nil || !strings.Contains(err.Error(), "SU") {
		t.Fatalf("an account seed: %v, want an error asking for a user seed", err)
	}
	if _, err := bus.StartEmbedded(testCtx(t), bus.EmbeddedConfig{StoreDir: t.TempDir(), ClientSeed: seed,
		ConfigFile: filepath.Join(t.TempDir(), "x.conf")}); err == nil || !strings.Contains(err.Error(), "ConfigFile") {
		t.Fatalf("ClientSeed with ConfigFile: %v", err)
	}
}
