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

// Export writes the selected FACTS messages to w, undecoded, so that an
// export keeps even messages this version cannot read. It returns how many
// it wrote.
func (b *Bus) Export(ctx context.Context, w io.Writer, opts ReadOptions) (int, error) {
	if opts.Follow {
		return 0, errors.New("export: cannot follow; an export ends where the stream ends")
	}
	bw := bufio.NewWriter(w)
	enc := msgpack.NewEncoder(bw)
	filter := opts.Filter
	if filter == "" {
		filter = "fact.>"
	}
	if err := enc.Encode(exportHeader{Format: ExportFormat, Version: ExportVersion, Stream: FactsStream, Filter: filter, Created: time.Now().UTC()}); err != nil {
		return 0, fmt.Errorf("export: %w", err)
	}
	n := 0
	_, err := b.Read(ctx, opts, func(r Raw) error {
		n++
		return enc.Encode(exportEntry(r))
	})
	if err != nil {
		return n, fmt.Errorf("export after %d messages: %w", n, err)
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("export: %w", err)
	}
	return n, nil
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
		if err != nil {
			return fmt.Errorf("read export: entry %d: %w", i, err)
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
// returns how many messages it stored.
func (b *Bus) Import(ctx context.Context, r io.Reader) (int, error) {
	s, err := b.js.Stream(ctx, FactsStream)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	state := s.CachedInfo().State
	if state.Msgs > 0 {
		return 0, fmt.Errorf("import: stream %s already holds %d messages; import needs an empty stream", FactsStream, state.Msgs)
	}
	// The stream is empty and we are its only writer, so the n-th message
	// lands at LastSeq+n; every ack is checked against that.
	next := state.LastSeq + 1
	runs := map[string]Expect{}
	n := 0
	type sent struct {
		fut jetstream.PubAckFuture
		seq uint64
	}
	var inflight []sent
	flush := func() error {
		for _, f := range inflight {
			select {
			case ack := <-f.fut.Ok():
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
	err = ReadExport(r, func(raw Raw) error {
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
		inflight = append(inflight, sent{f, next})
		runs[key] = runs[key].then(next)
		next++
		n++
		if len(inflight) >= 1024 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return n, err
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
