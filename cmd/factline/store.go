package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/factline/factline/bus"
)

// target is where a command finds the log: an embedded store directory or a
// NATS server URL.
type target struct {
	store string
	url   string
	cred  credentials
	// replicas is what the streams must have on a --nats server: 3 on a
	// three-node cluster.
	replicas int
	// guard reports the server's permission violations on a --nats
	// connection once open has made one.
	guard *guard
	// existing says the command reads a log that must already be there:
	// a mistyped --store path is refused instead of opened as a new,
	// empty store.
	existing bool
	// fsync is the durability of the embedded server a --store opens,
	// for the commands that take --fsync.
	fsync durabilityFlag
	// embedded is set once open has started an embedded server on the
	// store: this process holds it (rather than attaching to the process
	// that does).
	embedded bool
	// conn is this process's use of a --store once open has opened it:
	// as its holder, or attached to the holder's server.
	conn *bus.Store
	// compressFacts creates FACTS compressed where open creates it
	// (setup --compress).
	compressFacts bool
	// serverLog receives the log of an embedded server this process
	// starts on the store ('run' watches it for a full disk); nil
	// silences it.
	serverLog server.Logger
}

// errFsyncNotEmbedded is --fsync given where no embedded server starts.
var errFsyncNotEmbedded = usageError{"--fsync applies to an embedded server (--store); a NATS server's own configuration decides its durability (jetstream sync_interval)"}

// readsExisting marks the target as one the command only reads.
func (t *target) readsExisting() *target { t.existing = true; return t }

// storeExists reports whether dir holds a JetStream store (or is held by
// another process, which is making one).
func storeExists(dir string) bool {
	if st, err := os.Stat(filepath.Join(dir, "jetstream")); err == nil && st.IsDir() {
		return true
	}
	_, err := os.Stat(filepath.Join(dir, bus.StoreRecordFile))
	return err == nil
}

// flags adds the connection flags to a command that opens the log: every
// such command takes them, each in its own flag set.
func (t *target) flags(fs *pflag.FlagSet) {
	fs.StringVar(&t.store, "store", "", "directory of an embedded JetStream store: this process opens its server, or attaches to the process that has (docs/operations.md#one-store-one-server)")
	fs.StringVar(&t.url, "nats", "", "URL of a NATS server or cluster (e.g. nats://127.0.0.1:4222)")
	fs.IntVar(&t.replicas, "replicas", 1, "with --nats: replicas the streams have (or, for setup, get): 1 on one server, 3 on a three-node cluster")
	markConnection(fs, "store", "nats", "replicas")
	t.cred.flags(fs)
}

// probe checks, on a --nats connection, that this identity may publish
// what the command will (see probe.go); an embedded store needs no check.
func (t *target) probe(ctx context.Context, b *bus.Bus, needs []need) error {
	if t.guard == nil {
		return nil
	}
	return probe(ctx, b, t.guard, needs)
}

// open connects to the target; the returned function releases it.
func (t *target) open(ctx context.Context) (*bus.Bus, func(), error) {
	switch {
	case t.store != "" && t.url != "":
		return nil, nil, usageError{"give --store or --nats, not both"}
	case t.url != "":
		if t.fsync.set {
			return nil, nil, errFsyncNotEmbedded
		}
		if t.replicas < 1 {
			return nil, nil, usageError{"--replicas must be at least 1"}
		}
		b, g, err := dial(ctx, t.url, &t.cred, bus.Config{Replicas: t.replicas, CompressFacts: t.compressFacts})
		if err != nil {
			return nil, nil, err
		}
		t.guard = g
		return b, b.Conn().Close, nil
	case t.cred.given():
		return nil, nil, usageError{"credentials and TLS flags apply to --nats only"}
	case t.store != "":
		if t.existing && !storeExists(t.store) {
			return nil, nil, fmt.Errorf("no store at %s: it holds no JetStream data (is the path right? factline run --store %s makes one)", t.store, t.store)
		}
		// One process at a time runs the store's server; every other
		// attaches to it (bus.OpenEmbedded): two servers on one directory
		// would each overwrite what the other wrote.
		s, err := openStore(ctx, t.store, bus.StoreOptions{Durability: t.fsync.get(), RequireDurability: t.fsync.set, CompressFacts: t.compressFacts, ServerLog: t.serverLog})
		if err != nil {
			return nil, nil, err
		}
		t.conn = s
		t.embedded = s.Holds()
		return s.Bus(), s.Close, nil
	}
	return nil, nil, usageError{"say where the log is: --store DIR or --nats URL"}
}

// durabilityFlag is --fsync: the durability of an embedded server the
// command starts, checked as it is parsed, and whether it was given at
// all (where no embedded server starts, giving it is a mistake).
type durabilityFlag struct {
	mode bus.Durability
	set  bool
}

func (d *durabilityFlag) String() string {
	if d.mode == "" {
		return string(bus.SyncAlways)
	}
	return string(d.mode)
}

func (d *durabilityFlag) Set(s string) error {
	m, err := bus.ParseDurability(s)
	if err != nil {
		return err
	}
	d.mode, d.set = m, true
	return nil
}

func (d *durabilityFlag) Type() string { return "always|interval" }

// get is the durability to start a server with (always unless given).
func (d *durabilityFlag) get() bus.Durability {
	if d.mode == "" {
		return bus.SyncAlways
	}
	return d.mode
}

// fsyncFlag adds --fsync to a command that starts an embedded server: the
// durability of what it acknowledges (docs/operations.md#durability).
func fsyncFlag(c *cobra.Command, d *durabilityFlag) {
	c.Flags().Var(d, "fsync", "embedded server durability: always (fsync before every acknowledgement) or interval (fsync on a timer, faster; an OS crash may lose the last second)")
	_ = c.RegisterFlagCompletionFunc("fsync", fixedCompletions(string(bus.SyncAlways), string(bus.SyncInterval)))
}

// attachWait bounds how long a command waits for the process that has
// just taken a store to serve it (bus.StoreOptions.AttachWait); a test
// shortens it.
var attachWait = 30 * time.Second

// openStore opens a store directory (bus.OpenEmbedded), saying a refusal
// in the command's terms: which flag to change, or which process to stop.
func openStore(ctx context.Context, dir string, opts bus.StoreOptions) (*bus.Store, error) {
	opts.AttachWait = attachWait
	s, err := bus.OpenEmbedded(ctx, dir, opts)
	var held *bus.StoreHeldError
	switch {
	case !errors.As(err, &held):
		return s, err
	case held.Conflict == bus.ConflictDurability:
		return nil, usageError{fmt.Sprintf("--fsync %s: store %s is held by %s, whose server runs with fsync: %s. "+
			"Leave --fsync out to join it, or stop that process first", held.Want, held.Dir, held.Holder, held.Durability)}
	}
	at := held.URL
	if at == "" {
		at = "no address yet"
	}
	return nil, fmt.Errorf("store %s is held by %s, which runs its server: a second server on the directory would corrupt it. "+
		"Stop that process first (it serves the store at %s), or run serve without --listen to join its server", held.Dir, held.Holder, at)
}
