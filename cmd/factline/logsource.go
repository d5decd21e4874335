package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

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
	// stdin is the command's standard input, which --file - reads.
	stdin func() io.Reader
	// streams is set by a command that reads the export once, in order
	// (replay): --file - is then read as it comes, not copied first.
	streams bool
	// spool is the name the copy of standard input is read by for --file
	// - ("" when there is none), and spoolFile the descriptor that keeps
	// it, closed when the command ends (removeSpool).
	spool     string
	spoolFile *os.File
}

// StdinFile is the --file value that reads the export from standard input.
const StdinFile = "-"

// errOneSource is --file given beside --store or --nats.
var errOneSource = usageError{"give --file, --store or --nats, only one"}

// flags finishes c as a command on s (see onTarget) and adds --file;
// fileHelp says what the file is to c. It returns c's flag set, for the
// command's own flags.
func (s *logSource) flags(c *cobra.Command, run runFunc, fileHelp string) *pflag.FlagSet {
	s.stdin = c.InOrStdin
	fs := onTarget(c, &s.t, func(ctx context.Context, args []string, out, errOut io.Writer) error {
		defer s.removeSpool()
		err := run(ctx, args, out, errOut)
		if err != nil && s.spool != "" {
			err = stdinNamed{err: err, spool: s.spool}
		}
		return err
	})
	fs.StringVar(&s.file, "file", "", fileHelp+"; - reads it from standard input")
	return fs
}

// fromSeqFlag adds --from-seq, for a command that replays a stream from
// a given sequence.
func (s *logSource) fromSeqFlag(fs *pflag.FlagSet) {
	fs.Uint64Var(&s.from, "from-seq", 0, "first stream sequence to replay")
}

// fromFile reports whether the log is read from an export file; one
// given beside a store or a server is a usage error. For --file - it
// copies standard input to a temporary file, which is then the file
// read, unless the command streams it (replay).
func (s *logSource) fromFile(ctx context.Context) (bool, error) {
	if s.file == "" {
		return false, nil
	}
	if s.t.store != "" || s.t.url != "" {
		return true, errOneSource
	}
	if s.file == StdinFile && !s.streams {
		if err := s.spoolStdin(ctx); err != nil {
			return true, err
		}
	}
	return true, nil
}

// spoolStdin copies standard input to a temporary file and makes it the
// file read: the commands other than replay read an export more than once
// (a check of it whole, then its facts; its facts, then the runs cached
// replies cite) or read its blobs where they lie, which a pipe cannot
// give. The copy is bounded by nothing but the temporary directory's free
// space (an export is as large as the log it copies); one that cannot be
// written whole stops the command naming the directory, before anything
// is read.
//
// The copy is unlinked as soon as it is made and read by its descriptor
// (/proc/self/fd/N, which opens the file a descriptor holds even once it
// has no name): no other process can find it, and however the command
// ends — a SIGKILL runs no deferred clean-up — the kernel frees it with
// the process. Where /proc is not mounted the copy keeps its name until
// the command ends (removeSpool), as it did before.
func (s *logSource) spoolStdin(ctx context.Context) error {
	f, err := os.CreateTemp("", "factline-stdin-*.flx")
	if err != nil {
		return fmt.Errorf("--file -: copying standard input to a temporary file: %w", err)
	}
	s.spoolFile, s.spool, s.file = f, f.Name(), f.Name()
	if byFD := fmt.Sprintf("/proc/self/fd/%d", f.Fd()); sameFile(f, byFD) && os.Remove(f.Name()) == nil {
		s.spool, s.file = byFD, byFD
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(f, s.stdin())
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		// A terminal's standard input ends only when told to: Ctrl-C
		// stops the wait, the read is left to the process's end.
		err = context.Cause(ctx)
	}
	if err != nil {
		return fmt.Errorf("--file -: copying standard input to a temporary file in %s ($TMPDIR): %w", os.TempDir(), err)
	}
	return nil
}

// sameFile reports whether path opens f's file.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// name is the export file as the command names it: "standard input" for
// --file -, whether it is read as it comes or from its copy.
func (s *logSource) name() string {
	if s.file == StdinFile || (s.spool != "" && s.file == s.spool) {
		return "standard input"
	}
	return s.file
}

// removeSpool closes the copy of standard input, if one was made, and
// removes it where it still has a name.
func (s *logSource) removeSpool() {
	if s.spoolFile == nil {
		return
	}
	_ = s.spoolFile.Close()
	if s.spool == s.spoolFile.Name() {
		_ = os.Remove(s.spool)
	}
}

// stdinNamed is a command's error about an export read from standard
// input: every mention of the copy it was read through says "standard
// input" instead, since the user gave no such file.
type stdinNamed struct {
	err   error
	spool string
}

// Error is the error's text with the copy's name replaced.
func (e stdinNamed) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.spool, "standard input")
}

// Unwrap returns the error, so that the exit code and errors.Is see it.
func (e stdinNamed) Unwrap() error { return e.err }

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
	if s.file == StdinFile {
		// Read once, in order, as it comes (streams).
		return replay.Reader(s.stdin()), nil, func() {}, nil
	}
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
