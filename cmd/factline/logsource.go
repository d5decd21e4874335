package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/projections/replay"
)

// logSource is where a command that only reads the log finds it: a store
// or a server (its target), or an export file. Every such command takes
// the same flags and refuses more than one of them alike.
type logSource struct {
	t    target
	file string
	// from is the first stream sequence read, for the commands that take
	// --from-seq (see fromSeqFlag).
	from uint64
}

// errOneSource is --file given beside --store or --nats.
var errOneSource = usageError{"give --file, --store or --nats, only one"}

// flags finishes c as a command on s (see onTarget) and adds --file;
// fileHelp says what the file is to c. It returns c's flag set, for the
// command's own flags.
func (s *logSource) flags(c *cobra.Command, run runFunc, fileHelp string) *pflag.FlagSet {
	fs := onTarget(c, &s.t, run)
	fs.StringVar(&s.file, "file", "", fileHelp)
	return fs
}

// fromSeqFlag adds --from-seq, for a command that replays a stream from
// a given sequence.
func (s *logSource) fromSeqFlag(fs *pflag.FlagSet) {
	fs.Uint64Var(&s.from, "from-seq", 0, "first stream sequence to replay")
}

// fromFile reports whether the log is read from an export file; one
// given beside a store or a server is a usage error.
func (s *logSource) fromFile() (bool, error) {
	if s.file == "" {
		return false, nil
	}
	if s.t.store != "" || s.t.url != "" {
		return true, errOneSource
	}
	return true, nil
}

// checkFile says an export file that cannot be opened is the call's
// mistake, before any replay begins (which would report it as a replay
// failing at fact 0).
func (s *logSource) checkFile() error {
	f, err := os.Open(s.file)
	if err != nil {
		return fileError{fmt.Errorf("--file: %w", err)}
	}
	return f.Close()
}

// checkWhole reads s's export file to its end, as every reader will, and
// returns what is wrong with it: for a command that acts on what it reads
// before it has read all of it (trace sends spans as they are made), so
// that nothing of a cut or edited file leaves the process.
func (s *logSource) checkWhole(ctx context.Context) error {
	f, err := os.Open(s.file)
	if err != nil {
		return fileError{fmt.Errorf("--file: %w", err)}
	}
	defer f.Close()
	return bus.ReadExport(f, func(bus.Raw) error { return ctx.Err() })
}

// replay opens s for the replay driver: the export file, or the stream
// of the store or server read from --from-seq (follow: and on as facts
// are committed). b is nil for a file; closeSource releases what was
// opened. The caller has checked fromFile.
func (s *logSource) replay(ctx context.Context, follow bool) (src replay.Source, b *bus.Bus, closeSource func(), err error) {
	if s.file != "" {
		if err := s.checkFile(); err != nil {
			return nil, nil, nil, err
		}
		return replay.File(s.file), nil, func() {}, nil
	}
	b, closeBus, err := s.t.readsExisting().open(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return replay.Stream(b, bus.ReadOptions{FromSeq: s.from, Follow: follow}), b, closeBus, nil
}
