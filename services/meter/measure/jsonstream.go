package measure

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"

	"github.com/factline/factline/events"
)

// The report's JSON is written a row at a time: a 100,000-run report's
// attempts are ~50 MB of JSON, and json.MarshalIndent holds it twice
// (compact, then indented) while the writer is handed it once. Attempts is
// the report's last field, so its rows are written after the rest of the
// report, each indented as MarshalIndent indents an element of a field of
// the top object: the bytes are EncodeJSON's (TestWriteJSONIsEncodeJSON).

// rowPrefix is what MarshalIndent puts before each line of an attempt row
// after its first: the row is an element of a field of the top object.
const rowPrefix = "    "

// attemptsTail is how the head of a report with no attempts ends: the
// rows go between its brackets.
var attemptsTail = []byte("\"attempts\": []\n}")

// writeJSON writes r's canonical JSON to w, holding one row's JSON at a
// time beyond the rest of the report's.
func writeJSON(w io.Writer, r Report) error {
	if len(r.Attempts) == 0 {
		// nil encodes as null and empty as []: MarshalIndent says which.
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return fmt.Errorf("encode report of %s: %w", r.Suite, err)
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	rows := r.Attempts
	r.Attempts = []AttemptRow{}
	head, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report of %s: %w", r.Suite, err)
	}
	if !bytes.HasSuffix(head, attemptsTail) {
		return fmt.Errorf("encode report of %s: its JSON does not end in its attempts", r.Suite)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(head[:len(head)-len(attemptsTail)])
	bw.WriteString("\"attempts\": [")
	enc := newRowEncoder()
	for i := range rows {
		row, err := enc.encode(&rows[i])
		if err != nil {
			return fmt.Errorf("encode report of %s: attempt %s: %w", r.Suite, rows[i].Run, err)
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n" + rowPrefix)
		bw.Write(row)
	}
	bw.WriteString("\n  ]\n}\n")
	// bufio keeps the first write error and returns it here.
	return bw.Flush()
}

// rowEncoder encodes attempt rows as MarshalIndent indents an element of
// a field of the top object, into buffers it reuses: a new pair of
// buffers a row (~1.3 KB) was garbage made as fast as rows were written,
// twice for the meter's store and once more for the CLI's check, at the
// suite's end, where the process peaks.
type rowEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func newRowEncoder() *rowEncoder {
	e := &rowEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetIndent(rowPrefix, "  ")
	return e
}

// encode returns the row's JSON, MarshalIndent's bytes (valid until the
// next call).
func (e *rowEncoder) encode(row *AttemptRow) ([]byte, error) {
	e.buf.Reset()
	if err := e.enc.Encode(row); err != nil {
		return nil, err
	}
	// Encode ends the value with a newline MarshalIndent does not write.
	return bytes.TrimSuffix(e.buf.Bytes(), []byte{'\n'}), nil
}

// JSONDigest returns the digest and length of r's canonical JSON
// (EncodeJSON's bytes) without holding them: the name its blob is stored
// under, known before the bytes are written to the store.
func JSONDigest(r Report) (events.Digest, int64, error) {
	h := sha256.New()
	c := &countingWriter{w: h}
	if err := writeJSON(c, r); err != nil {
		return "", 0, err
	}
	return events.Digest("sha256:" + hex.EncodeToString(h.Sum(nil))), c.n, nil
}

// countingWriter counts what it passes on.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ReadJSON decodes a report's JSON as json.Unmarshal would, reading its
// attempt rows one at a time from r: the report is held, its JSON is not.
// A report's fields other than its attempts are gathered and decoded
// together; "attempts" is the only key read as it streams (the last one
// wins, as json.Unmarshal has it).
func ReadJSON(r io.Reader) (Report, error) {
	rep, _, err := decodeJSON(r, nil, false)
	return rep, err
}

// ReadJSONKeeping decodes a report's JSON as ReadJSON does, but holds only
// the attempt rows keep returns true for (each is read, then kept or let
// go), and returns the digest of the JSON the whole report it read
// encodes to (JSONDigest's, computed as its rows pass; "" when the JSON
// is not in the form WriteJSON writes, so that no blob's name can be that
// digest). A reader that prints from a report's figures needs few of a
// large suite's rows (KeptForTheTable), and can still prove that what it
// read is the blob's whole.
func ReadJSONKeeping(r io.Reader, keep func(*AttemptRow) bool) (Report, events.Digest, error) {
	return decodeJSON(r, keep, true)
}

// ReadJSONRows decodes a report's JSON as ReadJSON does, handing each
// attempt row to each as it is read and holding none: a writer of the
// rows (JUnitWriter) needs one at a time.
func ReadJSONRows(r io.Reader, each func(*AttemptRow)) (Report, error) {
	rep, _, err := decodeJSON(r, func(a *AttemptRow) bool { each(a); return false }, false)
	return rep, err
}

// KeptForTheTable says whether a row is one the table of a report reads
// (WriteTable, Whys, ControlLines): a harness error, an excluded attempt,
// an attempt never run. Every figure else is in the report's treatments.
func KeptForTheTable(a *AttemptRow) bool {
	return a.Status == events.RunErrored || a.Outcome == OutcomeExcluded || a.NotRun
}

// decodeJSON is ReadJSON, holding the rows keep returns true for (nil:
// every row), and, with digest, hashing the report's canonical JSON as
// its rows pass.
func decodeJSON(r io.Reader, keep func(*AttemptRow) bool, digest bool) (Report, events.Digest, error) {
	dec := json.NewDecoder(r)
	if err := wantDelim(dec, '{'); err != nil {
		return Report{}, "", err
	}
	var head bytes.Buffer
	head.WriteByte('{')
	var rows []AttemptRow
	var h *rowHash
	canonical := digest
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Report{}, "", fmt.Errorf("decode the report: %w", err)
		}
		key, ok := tok.(string)
		if !ok {
			return Report{}, "", fmt.Errorf("decode the report: offset %d: a key is %v", dec.InputOffset(), tok)
		}
		if strings.EqualFold(key, "attempts") { // as json.Unmarshal matches keys
			if h != nil {
				canonical = false // a second list: not WriteJSON's
			}
			if canonical {
				if h, err = newRowHash(head.Bytes()); err != nil {
					return Report{}, "", err
				}
			}
			if rows, err = readRows(dec, keep, h); err != nil {
				return Report{}, "", err
			}
			continue
		}
		if h != nil {
			canonical = false // a field after the rows: not WriteJSON's
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Report{}, "", fmt.Errorf("decode the report: field %q: %w", key, err)
		}
		if head.Len() > 1 {
			head.WriteByte(',')
		}
		k, _ := json.Marshal(key) // a string always encodes
		head.Write(k)
		head.WriteByte(':')
		head.Write(raw)
	}
	if err := wantDelim(dec, '}'); err != nil {
		return Report{}, "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Report{}, "", fmt.Errorf("decode the report: offset %d: more follows the report", dec.InputOffset())
	}
	head.WriteByte('}')
	var rep Report
	if err := json.Unmarshal(head.Bytes(), &rep); err != nil {
		return Report{}, "", fmt.Errorf("decode the report: %w", err)
	}
	rep.Attempts = rows
	if !canonical {
		return rep, "", nil
	}
	if h == nil || h.rows == 0 {
		// No rows: WriteJSON encodes the report whole (null or []).
		d, _, err := JSONDigest(rep)
		return rep, d, err
	}
	return rep, h.sum(), nil
}

// rowHash hashes a report's canonical JSON as writeJSON writes it: the
// head, then each row as it is read.
type rowHash struct {
	h    hash.Hash
	enc  *rowEncoder
	rows int
}

// newRowHash starts the hash with the head of the report whose fields
// before its attempts are the JSON object fields (without its closing
// brace).
func newRowHash(fields []byte) (*rowHash, error) {
	var rep Report
	if err := json.Unmarshal(append(slices.Clip(fields), '}'), &rep); err != nil {
		return nil, fmt.Errorf("decode the report: %w", err)
	}
	rep.Attempts = []AttemptRow{}
	head, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the report read: %w", err)
	}
	if !bytes.HasSuffix(head, attemptsTail) {
		return nil, fmt.Errorf("encode the report read: its JSON does not end in its attempts")
	}
	h := sha256.New()
	h.Write(head[:len(head)-len(attemptsTail)])
	h.Write([]byte("\"attempts\": ["))
	return &rowHash{h: h, enc: newRowEncoder()}, nil
}

// add hashes one row as writeJSON writes it.
func (r *rowHash) add(row *AttemptRow) error {
	b, err := r.enc.encode(row)
	if err != nil {
		return fmt.Errorf("encode the report read: attempt %s: %w", row.Run, err)
	}
	if r.rows > 0 {
		r.h.Write([]byte{','})
	}
	r.h.Write([]byte("\n" + rowPrefix))
	r.h.Write(b)
	r.rows++
	return nil
}

// sum ends the report's JSON and returns its digest.
func (r *rowHash) sum() events.Digest {
	r.h.Write([]byte("\n  ]\n}\n"))
	return events.Digest("sha256:" + hex.EncodeToString(r.h.Sum(nil)))
}

// readRows reads the value of "attempts": null or an array of rows,
// holding those keep returns true for (nil: every one) and hashing each
// into h (when not nil).
func readRows(dec *json.Decoder, keep func(*AttemptRow) bool, h *rowHash) ([]AttemptRow, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("decode the report: attempts: %w", err)
	}
	if tok == nil {
		return nil, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("decode the report: offset %d: attempts is %v, not a list", dec.InputOffset(), tok)
	}
	rows := []AttemptRow{}
	for n := 1; dec.More(); n++ {
		var row AttemptRow
		if err := dec.Decode(&row); err != nil {
			return nil, fmt.Errorf("decode the report: attempt %d: %w", n, err)
		}
		if h != nil {
			if err := h.add(&row); err != nil {
				return nil, err
			}
		}
		if keep == nil || keep(&row) {
			rows = append(rows, row)
		}
	}
	if err := wantDelim(dec, ']'); err != nil {
		return nil, err
	}
	return rows, nil
}

// wantDelim reads the next token, which must be d.
func wantDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("decode the report: %w", err)
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return fmt.Errorf("decode the report: offset %d: %v where %q belongs", dec.InputOffset(), tok, d)
	}
	return nil
}
