package bus

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/factline/factline/events"
)

// An export file is a sequence of msgpack maps: one header, then one entry
// per stored message in stream order (version 3: with the blobs the
// messages name, each in parts before the first message that names it),
// then (version 2 on) a trailer that says the export ended and what it
// held. docs/operations.md documents it.

// ExportFormat and ExportVersion identify an export file's header:
// ExportVersion is the newest version this reader knows and the one
// ExportWithBlobs writes. Version 1 files have no trailer; version 2
// files carry facts only (what Export writes); both are still read.
const (
	ExportFormat       = "factline-export"
	ExportVersion      = 3
	exportVersionFacts = 2
)

// exportHeader's and exportItem's times are pointers because the msgpack
// decoder panics decoding nil into a time.Time: a damaged file must be
// refused, not crash its reader.
type exportHeader struct {
	Format  string     `msgpack:"format"`
	Version int        `msgpack:"version"`
	Stream  string     `msgpack:"stream"`
	Filter  string     `msgpack:"filter"`
	Created *time.Time `msgpack:"created"`
}

type exportEntry struct {
	Seq     uint64    `msgpack:"seq"`
	Subject string    `msgpack:"subject"`
	MsgID   string    `msgpack:"msg_id"`
	Time    time.Time `msgpack:"time"`
	Data    []byte    `msgpack:"data"`
}

// exportTrailer ends a version 2 export. The digest is over the entries'
// bytes as written rather than over chosen fields: a reader has those
// bytes without decoding anything, they need no canonical form to agree
// on, and they cover every field of an entry (its time too, and any a
// later version adds), so a copy that changed any byte of an entry is
// caught, not only one that changed a message.
type exportTrailer struct {
	End     bool   `msgpack:"end"`
	Entries uint64 `msgpack:"entries"`
	SHA256  []byte `msgpack:"sha256"`
}

// exportItem is a map after the header: an entry (a message, or in
// version 3 a part of a blob when blob is set), or the trailer when end
// is true.
type exportItem struct {
	Seq     uint64     `msgpack:"seq"`
	Subject string     `msgpack:"subject"`
	MsgID   string     `msgpack:"msg_id"`
	Time    *time.Time `msgpack:"time"`
	Data    []byte     `msgpack:"data"`
	End     bool       `msgpack:"end"`
	Entries uint64     `msgpack:"entries"`
	SHA256  []byte     `msgpack:"sha256"`
	Blob    string     `msgpack:"blob"`
	Size    uint64     `msgpack:"size"`
	Offset  uint64     `msgpack:"offset"`
}

// What an ExportError says is wrong with an export file; match them with
// errors.Is.
var (
	// ErrNotExport: the file does not start with an export header this
	// reader knows.
	ErrNotExport = errors.New("not a factline export")
	// ErrExportCut: the file ends before its end marker, inside an entry
	// or between two.
	ErrExportCut = errors.New("the export was cut")
	// ErrExportBadEnd: the end marker disagrees with the entries before
	// it, or something follows it.
	ErrExportBadEnd = errors.New("the export's end marker does not match")
	// ErrExportBadEntry: an entry holds no message (nor, in version 3, a
	// part of a blob).
	ErrExportBadEntry = errors.New("an export entry holds no message")
	// ErrExportBadBlob: a version 3 blob's bytes do not match its digest,
	// its digest is not one, or its parts are missing or out of order.
	ErrExportBadBlob = errors.New("an export's blob does not match its digest")
)

// ExportError is why a reader refused an export file.
type ExportError struct {
	// File names the file, when the reader read one with a name.
	File string
	// Entries is how many entries were read whole before the problem.
	Entries int
	// Kind is one of ErrNotExport, ErrExportCut, ErrExportBadEnd,
	// ErrExportBadEntry and ErrExportBadBlob.
	Kind error
	// Digest names the blob, for ErrExportBadBlob.
	Digest events.Digest
	// Problem says what is wrong, in words.
	Problem string
	// Err is the decoder's error behind it, if any.
	Err error
}

// Error says which file, and what is wrong with it.
func (e *ExportError) Error() string {
	s := "read export"
	if e.File != "" {
		s += " " + e.File
	}
	s += ": " + e.Problem
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns Kind and the decoder's error, so that errors.Is matches
// either.
func (e *ExportError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
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
	// Version is the format version of the file written or imported. A
	// version 1 file has no end marker: a copy of it cut between two
	// entries imported as a shorter log, and a caller should say so.
	Version int
	// Blobs is how many blobs a version 3 export wrote, or its import
	// read; BlobBytes is their size in bytes.
	Blobs     int
	BlobBytes int64
	// BlobsPresent is how many of the blobs read by an import the target
	// store held already (and were not stored again).
	BlobsPresent int
	// MissingBlobs is how many blob refs of the exported facts
	// (events.BlobRefs: a request, a case, a snapshot, ...) name a blob the
	// store does not hold, counted once per fact and field; Missing lists
	// the first MaxMissingListed of them, in log order. A digest that
	// names no blob (an identity) is never counted. Whatever reads such a
	// blob fails on the file as it would on the store.
	MissingBlobs int
	Missing      []MissingBlob
}

// MaxMissingListed bounds PortResult.Missing.
const MaxMissingListed = 10

// MissingBlob is a blob ref of an exported fact whose blob the store does
// not hold.
type MissingBlob struct {
	Seq     uint64 // the message's sequence in the source stream
	Subject string
	Kind    events.Kind
	Ref     events.BlobRef
}

// String names the missing blob and what needs it.
func (m MissingBlob) String() string {
	return fmt.Sprintf("message %d (%s) field %s: %s, %s, needed for %s", m.Seq, m.Kind, m.Ref.Field, m.Ref.Digest, m.Ref.Holds, events.BlobNeeds(m.Ref.Holds))
}

// flag records r in res.Flagged when it holds no fact of its subject.
func (res *PortResult) flag(r Raw) {
	if _, err := r.Fact(); err != nil {
		res.Flagged = append(res.Flagged, BadRecord{Seq: r.Seq, Subject: r.Subject, Err: err})
	}
}

// Export writes the selected FACTS messages to w, undecoded, as a version
// 2 export (facts only), so that an export keeps even messages this
// version cannot read, and flags those that hold no fact of their
// subject. The end marker is written only after the last message was
// read, so an export that fails midway leaves a file every reader refuses
// as cut.
func (b *Bus) Export(ctx context.Context, w io.Writer, opts ReadOptions) (PortResult, error) {
	return b.export(ctx, w, opts, false)
}

// ExportWithBlobs is Export that also carries the blobs the facts name, as
// a version 3 export: each blob whole (a request stored as a delta is
// rebuilt and checked against its digest), once, in parts before the
// first fact that names it. Every well-formed digest a fact holds is
// carried when the store holds its blob; a blob ref (events.BlobRefs) the
// store does not hold is counted and named in PortResult.MissingBlobs and
// Missing, not an error: the rest of the log is still worth a copy.
func (b *Bus) ExportWithBlobs(ctx context.Context, w io.Writer, opts ReadOptions) (PortResult, error) {
	return b.export(ctx, w, opts, true)
}

func (b *Bus) export(ctx context.Context, w io.Writer, opts ReadOptions, withBlobs bool) (PortResult, error) {
	version := exportVersionFacts
	if withBlobs {
		version = ExportVersion
	}
	res := PortResult{Version: version}
	if opts.Follow {
		return res, errors.New("export: cannot follow; an export ends where the stream ends")
	}
	bw := bufio.NewWriter(w)
	enc := msgpack.NewEncoder(bw)
	sum := sha256.New()
	entries := msgpack.NewEncoder(io.MultiWriter(bw, sum))
	filter := opts.Filter
	if filter == "" {
		filter = "fact.>"
	}
	created := time.Now().UTC()
	if err := enc.Encode(exportHeader{Format: ExportFormat, Version: version, Stream: FactsStream, Filter: filter, Created: &created}); err != nil {
		return res, fmt.Errorf("export: %w", err)
	}
	held := map[events.Digest]bool{} // the digests met so far: whether the store held a blob of each
	n := 0                           // entries written, blob parts included
	_, err := b.Read(ctx, opts, func(r Raw) error {
		res.Messages++
		f, ferr := r.Fact()
		if ferr != nil {
			res.Flagged = append(res.Flagged, BadRecord{Seq: r.Seq, Subject: r.Subject, Err: ferr})
		} else if withBlobs {
			for _, d := range namedDigests(f) {
				if _, met := held[d]; met {
					continue
				}
				parts, ok, err := b.exportBlob(ctx, entries, d, &res)
				if err != nil {
					return fmt.Errorf("the blob %s that message %d on %s names: %w", d, r.Seq, r.Subject, err)
				}
				held[d] = ok
				n += parts
			}
			for _, ref := range events.BlobRefs(f) {
				// namedDigests holds every digest of the body, so held
				// knows each ref's; a malformed one (refused by the
				// decoder before here) would read as missing.
				if held[ref.Digest] {
					continue
				}
				res.MissingBlobs++
				if len(res.Missing) < MaxMissingListed {
					res.Missing = append(res.Missing, MissingBlob{Seq: r.Seq, Subject: r.Subject, Kind: f.Kind(), Ref: ref})
				}
			}
		}
		n++
		return entries.Encode(exportEntry(r))
	})
	if err != nil {
		return res, fmt.Errorf("export after %d messages: %w", res.Messages, err)
	}
	if err := enc.Encode(exportTrailer{End: true, Entries: uint64(n), SHA256: sum.Sum(nil)}); err != nil {
		return res, fmt.Errorf("export: the end marker: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return res, fmt.Errorf("export: %w", err)
	}
	return res, nil
}

// ReadExport reads an export file, calling fn for each message in order;
// the blobs of a version 3 file are checked against their digests and
// passed over. A version 2 or 3 file is refused (an *ExportError) after
// the last entry when its end marker is missing, disagrees with the
// entries, or is followed by anything: fn has then seen entries of a file
// that is not whole, and a caller should not keep what it made of them.
// When r has a Name (an *os.File), the error names the file.
func ReadExport(r io.Reader, fn func(Raw) error) error {
	_, err := readExport(r, ExportVisitor{Fact: fn})
	return err
}

// ExportVisitor says what a reader of an export does with its entries.
type ExportVisitor struct {
	// Fact is called for each message in order (nil: none).
	Fact func(Raw) error
	// Blob is called for each blob of a version 3 file once its last part
	// was read and its bytes matched its digest, before the message that
	// first names it (nil: none).
	Blob func(ExportBlob) error
	// BlobData asks for each blob's bytes in ExportBlob.Data; without it a
	// blob's parts are hashed as they are read and not kept.
	BlobData bool
}

// ExportBlob is a blob a version 3 export carries, read whole and checked
// against its digest.
type ExportBlob struct {
	Digest events.Digest
	Size   int64
	// Data is the blob's bytes, when ExportVisitor.BlobData asked for them.
	Data []byte
	// Start and End are where the blob's entries begin and end in the
	// file, for ReadExportBlob to read it again from there.
	Start, End int64
}

// ReadExportWith reads an export as ReadExport does, handing each message
// and each blob to v; it returns the file's format version.
func ReadExportWith(r io.Reader, v ExportVisitor) (int, error) {
	return readExport(r, v)
}

// countingReader counts the bytes read from r, so that a reader knows
// where in a file each entry starts.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// readExport reads an export, returning its format version.
func readExport(r io.Reader, v ExportVisitor) (int, error) {
	var name string
	if n, ok := r.(interface{ Name() string }); ok {
		name = n.Name()
	}
	fail := func(entries int, kind error, err error, problem string, args ...any) (int, error) {
		return 0, &ExportError{File: name, Entries: entries, Kind: kind, Problem: fmt.Sprintf(problem, args...), Err: err}
	}
	cr := &countingReader{r: r}
	br := bufio.NewReader(cr)
	pos := func() int64 { return cr.n - int64(br.Buffered()) }
	dec := msgpack.NewDecoder(br)
	var h exportHeader
	if err := dec.Decode(&h); err != nil {
		return fail(0, ErrNotExport, err, "not a factline export (no header)")
	}
	if h.Format != ExportFormat {
		return fail(0, ErrNotExport, nil, "not a factline export (format %q)", h.Format)
	}
	if h.Version > ExportVersion {
		return fail(0, ErrNotExport, nil, "version %d is newer than this reader's %d", h.Version, ExportVersion)
	}
	sealed := h.Version >= 2
	withBlobs := h.Version >= 3
	sum := sha256.New()
	var open *blobParts // the blob whose parts are being read
	for i := 1; ; i++ {
		// The end of the file is looked for between maps, not taken from
		// the decoder: a map cut after its first byte ends with io.EOF
		// from it too.
		if _, err := br.Peek(1); errors.Is(err, io.EOF) {
			if sealed {
				return fail(i-1, ErrExportCut, nil, "the export ends after entry %d without its end marker: the file was cut", i-1)
			}
			return h.Version, nil
		}
		start := pos()
		raw, err := dec.DecodeRaw()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fail(i-1, ErrExportCut, err, "the file ends inside entry %d (cut short?)", i)
		}
		if err != nil {
			return fail(i-1, ErrExportBadEntry, err, "entry %d", i)
		}
		var e exportItem
		if err := msgpack.Unmarshal(raw, &e); err != nil {
			return fail(i-1, ErrExportBadEntry, err, "entry %d", i)
		}
		if withBlobs && e.Blob != "" && !e.End {
			sum.Write(raw)
			if open == nil {
				open, err = startBlob(i, e, start, v.BlobData)
			} else {
				err = open.add(i, e)
			}
			if err == nil && open.complete() {
				done := open
				open = nil
				if err = done.check(i); err == nil && v.Blob != nil {
					if err := v.Blob(done.blob(pos())); err != nil {
						return h.Version, err
					}
				}
			}
			if err != nil {
				ee := err.(*ExportError)
				ee.File, ee.Entries = name, i-1
				return 0, ee
			}
			continue
		}
		if open != nil {
			_, err := fail(i-1, ErrExportBadBlob, nil, "entry %d: the blob %s that entries %d to %d began ends there, at byte %d of its %d: its other parts were lost", i, open.d, open.first, i-1, open.next, open.size)
			err.(*ExportError).Digest = open.d
			return 0, err
		}
		if e.End && sealed {
			return h.Version, checkExportEnd(br, sum.Sum(nil), i-1, e, func(kind error, problem string, args ...any) error {
				_, err := fail(i-1, kind, nil, problem, args...)
				return err
			})
		}
		if e.Subject == "" || len(e.Data) == 0 {
			// What a second export's header decodes to: two files run
			// together, or an entry edited out of shape.
			return fail(i-1, ErrExportBadEntry, nil, "entry %d holds no message (no subject or no data): two exports run together, or an edited file?", i)
		}
		sum.Write(raw)
		if v.Fact == nil {
			continue
		}
		r := Raw{Seq: e.Seq, Subject: e.Subject, MsgID: e.MsgID, Data: e.Data}
		if e.Time != nil {
			r.Time = *e.Time
		}
		if err := v.Fact(r); err != nil {
			return h.Version, err
		}
	}
}

// checkExportEnd checks a version 2 export's end marker, read after n
// entries whose bytes hash to sum, and that nothing follows it in br.
func checkExportEnd(br *bufio.Reader, sum []byte, n int, end exportItem, fail func(kind error, problem string, args ...any) error) error {
	if end.Entries != uint64(n) {
		return fail(ErrExportBadEnd, "the end marker after entry %d counts %d entries: entries were lost or added", n, end.Entries)
	}
	if !bytes.Equal(end.SHA256, sum) {
		return fail(ErrExportBadEnd, "the end marker's sha256 disagrees with the %d entries before it: an entry was changed", n)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		if err != nil {
			return fail(ErrExportBadEnd, "reading past the end marker after entry %d: %v", n, err)
		}
		return fail(ErrExportBadEnd, "bytes follow the end marker after entry %d: two exports run together, or a file appended to?", n)
	}
	return nil
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
	// A blob comes before the first fact that names it and is stored
	// before that fact is sent, so the store never holds a fact naming a
	// blob it lacks, even when an import from a pipe stops midway.
	restore := func(blob ExportBlob) error {
		_, present, err := b.alreadyStored(ctx, blob.Digest)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		res.Blobs++
		res.BlobBytes += blob.Size
		if present {
			res.BlobsPresent++
			return nil
		}
		if _, err := b.Blobs().Put(ctx, blob.Data); err != nil {
			return fmt.Errorf("import: %w", err)
		}
		return nil
	}
	res.Version, err = readExport(r, ExportVisitor{BlobData: true, Blob: restore, Fact: func(raw Raw) error {
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
	}})
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
// file cut short (inside an entry, or a version 2 file without its end
// marker), an end marker that disagrees with the entries or is followed
// by more, two files run together or an entry repeated is an error naming
// the entry. A command checks a file with it before it opens a
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
