package bus

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vmihailenco/msgpack/v5"
)

// An export file is a sequence of msgpack maps: one header, then one entry
// per stored message in stream order. docs/operations.md documents it.

// ExportFormat and ExportVersion identify an export file's header.
const (
	ExportFormat  = "factline-export"
	ExportVersion = 1
)

type exportHeader struct {
	Format  string    `msgpack:"format"`
	Version int       `msgpack:"version"`
	Stream  string    `msgpack:"stream"`
	Filter  string    `msgpack:"filter"`
	Created time.Time `msgpack:"created"`
}

type exportEntry struct {
	Seq     uint64    `msgpack:"seq"`
	Subject string    `msgpack:"subject"`
	MsgID   string    `msgpack:"msg_id"`
	Time    time.Time `msgpack:"time"`
	Data    []byte    `msgpack:"data"`
}

// PortResult says what an export or an import carried.
type PortResult struct {
	// Messages is how many messages were written (export) or stored
	// (import).
	Messages int
	// Flagged lists, in order, the carried messages that hold no fact of
	// their subject: undecodable, or a fact whose kind, suite or run is not
	// the one its subject names (events.ErrSubjectMismatch). They are
	// carried unchanged, since an export is a copy of the log and a
	// forgery is evidence; every reader of the copy refuses them again.
	Flagged []BadRecord
}

// flag records r in res.Flagged when it holds no fact of its subject.
func (res *PortResult) flag(r Raw) {
	if _, err := r.Fact(); err != nil {
		res.Flagged = append(res.Flagged, BadRecord{Seq: r.Seq, Subject: r.Subject, Err: err})
	}
}

// Export writes the selected FACTS messages to w, undecoded, so that an
// export keeps even messages this version cannot read, and flags those
// that hold no fact of their subject.
func (b *Bus) Export(ctx context.Context, w io.Writer, opts ReadOptions) (PortResult, error) {
	var res PortResult
	if opts.Follow {
		return res, errors.New("export: cannot follow; an export ends where the stream ends")
	}
	bw := bufio.NewWriter(w)
	enc := msgpack.NewEncoder(bw)
	filter := opts.Filter
	if filter == "" {
		filter = "fact.>"
	}
	if err := enc.Encode(exportHeader{Format: ExportFormat, Version: ExportVersion, Stream: FactsStream, Filter: filter, Created: time.Now().UTC()}); err != nil {
		return res, fmt.Errorf("export: %w", err)
	}
	_, err := b.Read(ctx, opts, func(r Raw) error {
		res.Messages++
		res.flag(r)
		return enc.Encode(exportEntry(r))
	})
	if err != nil {
		return res, fmt.Errorf("export after %d messages: %w", res.Messages, err)
	}
	if err := bw.Flush(); err != nil {
		return res, fmt.Errorf("export: %w", err)
	}
	return res, nil
}

// ReadExport reads an export file, calling fn for each message in order.
func ReadExport(r io.Reader, fn func(Raw) error) error {
	dec := msgpack.NewDecoder(bufio.NewReader(r))
	var h exportHeader
	if err := dec.Decode(&h); err != nil {
		return fmt.Errorf("read export: not a factline export (no header: %w)", err)
	}
	if h.Format != ExportFormat {
		return fmt.Errorf("read export: not a factline export (format %q)", h.Format)
	}
	if h.Version > ExportVersion {
		return fmt.Errorf("read export: version %d is newer than this reader's %d", h.Version, ExportVersion)
	}
	for i := 1; ; i++ {
		var e exportEntry
		err := dec.Decode(&e)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("read export: the file ends inside entry %d (cut short?): %w", i, err)
		}
		if err != nil {
			return fmt.Errorf("read export: entry %d: %w", i, err)
		}
		if e.Subject == "" || len(e.Data) == 0 {
			// What a second export's header decodes to: two files run
			// together, or an entry edited out of shape.
			return fmt.Errorf("read export: entry %d holds no message (no subject or no data): two exports run together, or an edited file?", i)
		}
		if err := fn(Raw(e)); err != nil {
			return err
		}
	}
}

// Import publishes an export's messages into FACTS in their order, with
// their original message IDs. The FACTS stream must be empty: importing on
// top of other facts would interleave runs under sequences the export never
// had. Each message's run links (HeaderPrev) are rewritten to the sequences
// it gets here, so a filtered export loads as fast as the original. It
// returns how many messages it stored and flags, by their sequence in the
// export, those that hold no fact of their subject (stored all the same:
// see PortResult).
func (b *Bus) Import(ctx context.Context, r io.Reader) (PortResult, error) {
	var res PortResult
	if err := checkExport(r); err != nil {
		return res, fmt.Errorf("import: nothing was imported, the store is as it was: %w", err)
	}
	s, err := b.js.Stream(ctx, FactsStream)
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	state := s.CachedInfo().State
	if state.Msgs > 0 {
		return res, fmt.Errorf("import: stream %s already holds %d messages; import needs an empty stream", FactsStream, state.Msgs)
	}
	// The stream is empty and we are its only writer, so the n-th message
	// lands at LastSeq+n; every ack is checked against that.
	next := state.LastSeq + 1
	runs := map[string]Expect{}
	type sent struct {
		fut   jetstream.PubAckFuture
		seq   uint64
		entry int
	}
	var inflight []sent
	flush := func() error {
		for _, f := range inflight {
			select {
			case ack := <-f.fut.Ok():
				if ack.Duplicate {
					return fmt.Errorf("import %s: entry %d repeats the message ID %q of an earlier entry (an edited export?)", f.fut.Msg().Subject, f.entry, f.fut.Msg().Header.Get(nats.MsgIdHdr))
				}
				if ack.Sequence != f.seq {
					return fmt.Errorf("import %s: stored at %d, expected %d: another writer is using the stream", f.fut.Msg().Subject, ack.Sequence, f.seq)
				}
			case err := <-f.fut.Err():
				return fmt.Errorf("import %s: %w", f.fut.Msg().Subject, err)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		inflight = inflight[:0]
		return nil
	}
	entry := 0
	err = ReadExport(r, func(raw Raw) error {
		entry++
		m := &nats.Msg{Subject: raw.Subject, Data: raw.Data, Header: nats.Header{}}
		key := runKey(raw.Subject)
		if h := runs[key].header(); h != "" {
			m.Header.Set(HeaderPrev, h)
		}
		var opts []jetstream.PublishOpt
		if raw.MsgID != "" {
			opts = append(opts, jetstream.WithMsgID(raw.MsgID))
		}
		f, err := b.js.PublishMsgAsync(m, opts...)
		if err != nil {
			return fmt.Errorf("import %s: %w", raw.Subject, err)
		}
		inflight = append(inflight, sent{f, next, entry})
		runs[key] = runs[key].then(next)
		next++
		res.Messages++
		res.flag(raw)
		if len(inflight) >= 1024 {
			return flush()
		}
		return nil
	})
	if err == nil {
		return res, flush()
	}
	if ferr := flush(); ferr != nil {
		return res, fmt.Errorf("%w (and of what was sent before: %v)", err, ferr)
	}
	if res.Messages > 0 {
		// Read from a pipe, the file could not be checked whole first.
		return res, fmt.Errorf("import: %w; %d messages of it were stored before: the store is no longer empty, so once the file is whole, import it into a new store", err, res.Messages)
	}
	return res, err
}

// CheckExport reads a whole export as Import would, storing nothing: a
// file cut short, two run together or an entry repeated is an error
// naming the entry. A command checks a file with it before it opens a
// store to import into. When r can be read again it is left where it was.
func CheckExport(r io.Reader) error {
	if _, ok := r.(io.ReadSeeker); !ok {
		return readExportIDs(r)
	}
	return checkExport(r)
}

// checkExport reads a whole export file before anything of it is stored,
// when r can be read again (a file; a pipe cannot): a file cut short, two
// run together or an entry repeated is refused with the store untouched,
// instead of being imported up to the damage, which would leave a store
// that holds part of the log and refuses every import after. r is left
// where it was.
func checkExport(r io.Reader) error {
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		return nil
	}
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil // not seekable after all (standard input on a pipe)
	}
	if err := readExportIDs(rs); err != nil {
		return err
	}
	if _, err := rs.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("read export again after checking it: %w", err)
	}
	return nil
}

// readExportIDs reads an export to its end, refusing one that is not
// whole or repeats a message ID.
func readExportIDs(r io.Reader) error {
	ids := map[string]int{}
	entry := 0
	return ReadExport(r, func(raw Raw) error {
		entry++
		if raw.MsgID == "" {
			return nil
		}
		if first, ok := ids[raw.MsgID]; ok {
			return fmt.Errorf("entry %d on %s repeats the message ID %q of entry %d (an edited export?)", entry, raw.Subject, raw.MsgID, first)
		}
		ids[raw.MsgID] = entry
		return nil
	})
}

// runKey returns "fact.<suite>.<run>" of a fact subject: what groups
// messages into one run's links.
func runKey(subject string) string {
	dots := 0
	for i := range len(subject) {
		if subject[i] == '.' {
			if dots++; dots == 3 {
				return subject[:i]
			}
		}
	}
	return subject
}
