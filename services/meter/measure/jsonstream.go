package measure

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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
	for i := range rows {
		row, err := json.MarshalIndent(&rows[i], rowPrefix, "  ")
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
	dec := json.NewDecoder(r)
	if err := wantDelim(dec, '{'); err != nil {
		return Report{}, err
	}
	var head bytes.Buffer
	head.WriteByte('{')
	var rows []AttemptRow
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Report{}, fmt.Errorf("decode the report: %w", err)
		}
		key, ok := tok.(string)
		if !ok {
			return Report{}, fmt.Errorf("decode the report: offset %d: a key is %v", dec.InputOffset(), tok)
		}
		if strings.EqualFold(key, "attempts") { // as json.Unmarshal matches keys
			if rows, err = readRows(dec); err != nil {
				return Report{}, err
			}
			continue
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Report{}, fmt.Errorf("decode the report: field %q: %w", key, err)
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
		return Report{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Report{}, fmt.Errorf("decode the report: offset %d: more follows the report", dec.InputOffset())
	}
	head.WriteByte('}')
	var rep Report
	if err := json.Unmarshal(head.Bytes(), &rep); err != nil {
		return Report{}, fmt.Errorf("decode the report: %w", err)
	}
	rep.Attempts = rows
	return rep, nil
}

// readRows reads the value of "attempts": null or an array of rows.
func readRows(dec *json.Decoder) ([]AttemptRow, error) {
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
	for dec.More() {
		var row AttemptRow
		if err := dec.Decode(&row); err != nil {
			return nil, fmt.Errorf("decode the report: attempt %d: %w", len(rows)+1, err)
		}
		rows = append(rows, row)
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
