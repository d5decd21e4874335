package measure

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

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
