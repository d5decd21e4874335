package bus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Durability says when the embedded server fsyncs the file store.
type Durability string

const (
	// SyncAlways fsyncs every write before it is acknowledged, so an
	// acknowledged fact survives an OS crash or power loss. The default.
	SyncAlways Durability = "always"
	// SyncInterval fsyncs on a timer (EmbeddedConfig.SyncEvery). Faster, but
	// facts acknowledged since the last sync can be lost on an OS crash or
	// power failure (a process crash alone loses nothing: the OS holds the
	// pages). NATS' own default is a 2-minute interval.
	SyncInterval Durability = "interval"
)

// ParseDurability reads a durability setting from a flag or config value.
func ParseDurability(s string) (Durability, error) {
	switch Durability(s) {
	case SyncAlways, SyncInterval:
		return Durability(s), nil
	}
	return "", fmt.Errorf("durability %q: want %q or %q", s, SyncAlways, SyncInterval)
}

// EmbeddedConfig configures an in-process JetStream server.
type EmbeddedConfig struct {
	// StoreDir holds the file store. Required.
	StoreDir string
	// Durability defaults to SyncAlways.
	Durability Durability
	// SyncEvery is the fsync period in SyncInterval mode (default 1s).
	SyncEvery time.Duration
	// Listen, when set, also serves TCP clients at this host:port
	// ("127.0.0.1:4222"; port -1 picks a free one). A bare ":4222" binds
	// 127.0.0.1, never every interface. Empty means in-process only.
	Listen string
	// ClientSeed, when set, is the nkey seed of the one user the server
	// admits: every client, over TCP and in-process alike, must prove it
	// holds the seed (nats-server's own nkey challenge), and Connect does.
	// Nil admits anyone who can reach the listener. It cannot be combined
	// with ConfigFile, which then owns authentication.
	ClientSeed []byte
	// Name names the server (default "factline").
	Name string
	// Cluster, when set, joins the server to a cluster (see ClusterConfig).
	Cluster *ClusterConfig
	// Logger receives the server's log lines; nil silences them.
	Logger server.Logger
	// ConfigFile, when set, is a nats-server configuration file (accounts,
	// users, permissions; see ops/nats/) read before the settings above,
	// which take precedence over it: the store directory, durability,
	// listen address and cluster always come from this struct, and an
	// embedded server serves no monitoring port. Its
	// $VARIABLES resolve from the environment, as nats-server's do.
	ConfigFile string
}

// ClusterConfig joins an embedded server to a JetStream cluster on loopback
// or a private network.
type ClusterConfig struct {
	Name   string   // cluster name, identical on every node
	Listen string   // host:port for cluster routes
	Routes []string // nats-route://host:port of the other nodes
	// Advertise, when set, is the host:port the other nodes are told to
	// dial for this one's routes instead of Listen: the address of a
	// proxy or a NAT in front of it.
	Advertise string
}

// Embedded is a running in-process JetStream server.
type Embedded struct {
	srv    *server.Server
	cfg    EmbeddedConfig
	client nkeys.KeyPair // the admitted user, when ClientSeed was set
}

// StartEmbedded starts a JetStream server in this process and waits until it
// accepts connections.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("embedded server: StoreDir is required")
	}
	if err := os.MkdirAll(cfg.StoreDir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded server: store dir: %w", err)
	}
	if cfg.Durability == "" {
		cfg.Durability = SyncAlways
	}
	if cfg.Name == "" {
		cfg.Name = "factline"
	}
	var client nkeys.KeyPair
	if cfg.ClientSeed != nil {
		if cfg.ConfigFile != "" {
			return nil, errors.New("embedded server: ClientSeed and ConfigFile both set; the configuration file's users would be bypassed")
		}
		kp, err := clientKey(cfg.ClientSeed)
		if err != nil {
			return nil, fmt.Errorf("embedded server: client seed: %w", err)
		}
		client = kp
	}
	opts := &server.Options{}
	if cfg.ConfigFile != "" {
		fileOpts, err := server.ProcessConfigFile(cfg.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("embedded server: %w", err)
		}
		opts = fileOpts
	}
	opts.ServerName = cfg.Name
	opts.JetStream = true
	opts.StoreDir = cfg.StoreDir
	opts.NoSigs = true
	opts.NoLog = cfg.Logger == nil
	opts.DontListen = cfg.Listen == ""
	opts.Host, opts.Port = "127.0.0.1", -1
	// Networking beyond the client port is this struct's business alone: a
	// file written for a standalone nats-server must not make an embedded
	// one open a monitoring port or dial routes.
	opts.HTTPHost, opts.HTTPPort, opts.HTTPSPort = "", 0, 0
	opts.Cluster, opts.Routes = server.ClusterOpts{}, nil
	switch cfg.Durability {
	case SyncAlways:
		opts.SyncAlways = true
	case SyncInterval:
		opts.SyncInterval = cfg.SyncEvery
		if opts.SyncInterval <= 0 {
			opts.SyncInterval = time.Second
		}
	default:
		return nil, fmt.Errorf("embedded server: unknown durability %q", cfg.Durability)
	}
	if cfg.Listen != "" {
		host, port, err := splitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("embedded server: listen: %w", err)
		}
		if host == "" {
			// nats-server reads an empty host as every interface; an
			// address that says no host means this machine only.
			host = "127.0.0.1"
		}
		opts.Host, opts.Port = host, port
		if err := portFree(host, port); err != nil {
			return nil, fmt.Errorf("embedded server: %w", err)
		}
	}
	if client != nil {
		pub, err := client.PublicKey()
		if err != nil {
			return nil, fmt.Errorf("embedded server: client key: %w", err)
		}
		// No permissions: the holder of the store's seed is its owner.
		opts.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	}
	if c := cfg.Cluster; c != nil {
		host, port, err := splitHostPort(c.Listen)
		if err != nil {
			return nil, fmt.Errorf("embedded server: cluster listen: %w", err)
		}
		if host == "" {
			// As for the client port: no host means this machine only.
			host = "127.0.0.1"
		}
		if err := portFree(host, port); err != nil {
			return nil, fmt.Errorf("embedded server: cluster %w", err)
		}
		opts.Cluster.Name = c.Name
		opts.Cluster.Host, opts.Cluster.Port = host, port
		opts.Cluster.Advertise = c.Advertise
		opts.Routes = server.RoutesFromStr(joinComma(c.Routes))
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded server: %w", err)
	}
	if cfg.Logger != nil {
		srv.SetLoggerV2(cfg.Logger, false, false, false)
	}
	srv.Start()
	wait := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		return nil, fmt.Errorf("embedded server: not ready after %v", wait)
	}
	return &Embedded{srv: srv, cfg: cfg, client: client}, nil
}

// portFree fails, as net.Listen does (errors.Is syscall.EADDRINUSE), when
// another process listens on a given port: nats-server itself would only
// log it and never become ready, leaving its caller to time out saying
// nothing of why. (Port -1 or 0 is any free one.)
func portFree(host string, port int) error {
	if port <= 0 {
		return nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

// clientKey reads a user nkey seed.
func clientKey(seed []byte) (nkeys.KeyPair, error) {
	kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
	if err != nil {
		return nil, err
	}
	if pub, err := kp.PublicKey(); err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, errors.New("not the seed of an nkey user (want a seed starting with SU)")
	}
	return kp, nil
}

// ClientAuth returns the connection option that authenticates as
// the user seed names, for clients of an embedded server with ClientSeed.
func ClientAuth(seed []byte) (nats.Option, error) {
	kp, err := clientKey(seed)
	if err != nil {
		return nil, err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	return nats.Nkey(pub, kp.Sign), nil
}

// Server exposes the underlying nats-server, for tests and ops.
func (e *Embedded) Server() *server.Server { return e.srv }

// ClientURL is the TCP URL clients use, or "" when the server is
// in-process only.
func (e *Embedded) ClientURL() string {
	if e.cfg.Listen == "" {
		return ""
	}
	return e.srv.ClientURL()
}

// Connect opens an in-process client connection (no TCP involved),
// authenticated as the server's client user when it has one.
func (e *Embedded) Connect(opts ...nats.Option) (*nats.Conn, error) {
	base := []nats.Option{nats.InProcessServer(e.srv), nats.Name("factline")}
	if e.client != nil {
		pub, err := e.client.PublicKey()
		if err != nil {
			return nil, fmt.Errorf("connect in-process: %w", err)
		}
		base = append(base, nats.Nkey(pub, e.client.Sign))
	}
	opts = append(base, opts...)
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("connect in-process: %w", err)
	}
	return nc, nil
}

// Durability reports the fsync mode the server runs with.
func (e *Embedded) Durability() Durability { return e.cfg.Durability }

// Shutdown stops the server and waits for it to finish, flushing stores.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}
