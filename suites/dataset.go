package suites

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/fileerr"
)

// Dataset makes cases from the records of a data file: each selected
// record fills a case template. See docs/suite.md#datasets.
type Dataset struct {
	// Path is the data file, relative to the suite file: JSON Lines
	// (.jsonl, one object per line) or CSV (.csv, a header row naming
	// the fields).
	Path string `yaml:"path" json:"path"`
	// Template is a case file written as a Go text/template over one
	// record, relative to the suite file; a field the record lacks is an
	// error, never an empty string.
	Template string `yaml:"template" json:"template"`
	// ID names the field that holds each case's ID. Without it a case's
	// ID is "r-" and the first 12 hex digits of the record's digest, so
	// it stays the same however the file is reordered.
	ID string `yaml:"id,omitempty" json:"id,omitempty"`
	// SplitField names the field that holds a record's split; records of
	// another split than the suite's are left out.
	SplitField string `yaml:"split_field,omitempty" json:"split_field,omitempty"`
	// Limit keeps the first Limit records (after the split).
	Limit uint32 `yaml:"limit,omitempty" json:"limit,omitempty"`
	// Sample keeps N records drawn at random with Seed (after the split):
	// the same file and seed always select the same records.
	Sample *Sample `yaml:"sample,omitempty" json:"sample,omitempty"`
}

// Sample is a reproducible random selection of records.
type Sample struct {
	N    uint32 `yaml:"n" json:"n"`
	Seed uint64 `yaml:"seed" json:"seed"`
}

// DatasetRef pins the data a suite's cases came from: part of the spec,
// so a suite run on other data is another suite.
type DatasetRef struct {
	Path     string        `json:"path"`
	Digest   events.Digest `json:"digest"`
	Records  int           `json:"records"`  // records in the file
	Selected int           `json:"selected"` // records that became cases
}

func (d *Dataset) normalise(field string) error {
	if d.Path == "" {
		return fieldErr(field+".path", "required: the data file (.jsonl or .csv)")
	}
	switch strings.ToLower(filepath.Ext(d.Path)) {
	case ".jsonl", ".csv":
	default:
		return fieldErr(field+".path", "want a .jsonl or .csv file, got %q", d.Path)
	}
	if d.Template == "" {
		return fieldErr(field+".template", "required: the case template")
	}
	if d.Limit > 0 && d.Sample != nil {
		return fieldErr(field+".sample", "give limit or sample, not both")
	}
	if d.Sample != nil && d.Sample.N == 0 {
		return fieldErr(field+".sample.n", "want at least 1 record")
	}
	return nil
}

// MaxDataLine bounds a line of a data file, in bytes: a JSONL record is
// one line, and a CSV line (a record, or a part of a quoted field that
// spans lines) is held whole while it is read.
const MaxDataLine = cases.MaxFileBytes

// byteOrderMark is UTF-8's byte order mark, which some editors and
// spreadsheet exports put at the start of a file.
const byteOrderMark = "\xef\xbb\xbf"

// record is one record of a data file: its fields and the line it starts
// on.
type record struct {
	line   int
	fields map[string]any
	raw    []byte // canonical JSON of the fields, for the default ID
}

// readRecords streams the records of a data file to fn, and returns the
// file's digest and how many records it held.
func readRecords(path string, r io.Reader, fn func(record) error) (events.Digest, int, error) {
	h := sha256.New()
	r = io.TeeReader(r, h)
	// A byte order mark counts in the digest (it is in the file) and in
	// nothing else: not an error, not part of the first field's name.
	br := bufio.NewReader(r)
	if start, _ := br.Peek(len(byteOrderMark)); string(start) == byteOrderMark {
		_, _ = br.Discard(len(byteOrderMark))
	}
	r = br
	n := 0
	var err error
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		n, err = readCSV(path, r, fn)
	} else {
		n, err = readJSONL(path, r, fn)
	}
	if err != nil {
		return "", n, err
	}
	// Whatever the reader did not need still counts in the digest.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return "", n, fmt.Errorf("%s: %w", path, err)
	}
	return events.Digest("sha256:" + hex.EncodeToString(h.Sum(nil))), n, nil
}

func readJSONL(path string, r io.Reader, fn func(record) error) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxDataLine)
	n, line := 0, 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var fields map[string]any
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.UseNumber()
		if err := dec.Decode(&fields); err != nil || fields == nil {
			return n, &DataError{File: path, Line: line, Msg: "not a JSON object: " + jsonProblem(text, err)}
		}
		if dec.More() {
			return n, &DataError{File: path, Line: line, Msg: "more than one JSON value on the line"}
		}
		if key := duplicateKey(text); key != "" {
			return n, &DataError{File: path, Line: line, Field: key,
				Msg: "the key is in the record twice: JSON leaves which value counts to the reader, so name each key once"}
		}
		raw, _ := json.Marshal(fields)
		n++
		if err := fn(record{line: line, fields: fields, raw: raw}); err != nil {
			return n, err
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return n, &DataError{File: path, Line: line + 1, Msg: tooLong}
	} else if err != nil {
		return n, &DataError{File: path, Line: line + 1, Msg: err.Error()}
	}
	return n, nil
}

// tooLong says a line passed MaxDataLine.
var tooLong = fmt.Sprintf("the line is longer than the limit of %d bytes", MaxDataLine)

// duplicateKey returns where the JSON value in text names a key twice in
// one object (a path: "q", "meta.n", "list[1].k"), "" when it does not.
// text is known to decode.
func duplicateKey(text []byte) string {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	key, _ := duplicateIn(dec, "")
	return key
}

// duplicateIn reads one value from dec, checking its objects' keys.
func duplicateIn(dec *json.Decoder, at string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return "", err
			}
			key, _ := k.(string)
			path := key
			if at != "" {
				path = at + "." + key
			}
			if seen[key] {
				return path, nil
			}
			seen[key] = true
			if dup, err := duplicateIn(dec, path); dup != "" || err != nil {
				return dup, err
			}
		}
		_, err = dec.Token() // }
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if dup, err := duplicateIn(dec, fmt.Sprintf("%s[%d]", at, i)); dup != "" || err != nil {
				return dup, err
			}
		}
		_, err = dec.Token() // ]
	}
	return "", err
}

// lineLimit passes a reader's bytes on until a line passes MaxDataLine,
// then fails with a *DataError naming it: the CSV reader holds a line
// whole, however long.
type lineLimit struct {
	r    io.Reader
	path string
	line int // the line being read, from 1
	len  int // its bytes so far
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for _, b := range p[:n] {
		if b == '\n' {
			l.line++
			l.len = 0
			continue
		}
		if l.len++; l.len > MaxDataLine {
			return 0, &DataError{File: l.path, Line: l.line, Msg: tooLong}
		}
	}
	return n, err
}

func readCSV(path string, r io.Reader, fn func(record) error) (int, error) {
	cr := csv.NewReader(&lineLimit{r: r, path: path, line: 1})
	cr.ReuseRecord = false
	header, err := cr.Read()
	if err == io.EOF {
		return 0, nil
	}
	var long *DataError
	if errors.As(err, &long) {
		return 0, long
	}
	if err != nil {
		return 0, &DataError{File: path, Line: 1, Msg: err.Error()}
	}
	seen := map[string]bool{}
	for i, h := range header {
		if h == "" || seen[h] {
			return 0, &DataError{File: path, Line: 1, Field: h, Msg: fmt.Sprintf("column %d: a header needs a name of its own", i+1)}
		}
		seen[h] = true
	}
	n := 0
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return n, nil
		}
		if errors.As(err, &long) {
			return n, long
		}
		if err != nil {
			// FieldPos knows nothing of a record that did not parse.
			line := 0
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = max(pe.Line, pe.StartLine)
			}
			return n, &DataError{File: path, Line: max(line, 1), Msg: err.Error()}
		}
		line, _ := cr.FieldPos(0)
		fields := make(map[string]any, len(header))
		for i, h := range header {
			fields[h] = row[i]
		}
		raw, _ := json.Marshal(fields)
		n++
		if err := fn(record{line: line, fields: fields, raw: raw}); err != nil {
			return n, err
		}
	}
}

// jsonProblem says what a line holds instead of a JSON object, in a data
// author's words.
func jsonProblem(text []byte, err error) string {
	var te *json.UnmarshalTypeError
	if err == nil || errors.As(err, &te) {
		switch text[0] {
		case '[':
			return "got an array"
		case '"':
			return "got a string"
		case 'n':
			return "got null"
		case 't', 'f':
			return "got true or false"
		}
		return "got a number"
	}
	return err.Error()
}

// DataError is a bad record of a data file, or a case made from one that
// does not hold: it names the file, the line and, where there is one, the
// field. It matches ErrInvalid, and is told apart from a suite file's
// *Error with errors.As.
type DataError = fileerr.Error[dataFile]

// dataFile makes DataError the problem of a dataset's data file.
type dataFile struct{}

func (dataFile) Invalid() error { return ErrInvalid }

// datasetCases reads the dataset d names (paths relative to the suite
// file's directory dir, confined as every input is), selects its records
// and renders each into a case. It returns the cases in file order.
func datasetCases(d *Dataset, dir, split string, confine cases.Confine) ([]*cases.Case, DatasetRef, error) {
	rel := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	tplPath, err := confine(rel(d.Template))
	if err != nil {
		return nil, DatasetRef{}, fmt.Errorf("dataset.template: %w", err)
	}
	tplText, err := cases.ReadInput(tplPath, cases.MaxFileBytes, "a case template")
	if err != nil {
		return nil, DatasetRef{}, fmt.Errorf("dataset.template: %w", err)
	}
	tpl, err := template.New(filepath.Base(d.Template)).Option("missingkey=error").Funcs(templateFuncs).Parse(string(tplText))
	if err != nil {
		return nil, DatasetRef{}, fmt.Errorf("dataset.template: %w", err)
	}
	dataPath, err := confine(rel(d.Path))
	if err != nil {
		return nil, DatasetRef{}, fmt.Errorf("dataset.path: %w", err)
	}
	f, err := os.Open(dataPath)
	if err != nil {
		return nil, DatasetRef{}, fmt.Errorf("dataset.path: %w", err)
	}
	defer f.Close()

	var out []*cases.Case
	ids := map[string]int{}
	tplDir := filepath.Dir(tplPath)
	// take renders a selected record at once, so that only cases are held,
	// never the records they came from (a sample holds its N records).
	take := func(r record) error {
		if len(out) >= MaxCases {
			return fmt.Errorf("dataset: more than %d records selected; a suite has at most %d cases (set limit or sample)", MaxCases, MaxCases)
		}
		c, err := renderCase(d, tpl, r, tplDir, confine)
		if err != nil {
			return err
		}
		if line, dup := ids[c.ID]; dup {
			return &DataError{File: d.Path, Line: r.line, Field: d.ID, Msg: fmt.Sprintf("case id %q is also the record on line %d", c.ID, line)}
		}
		ids[c.ID] = r.line
		out = append(out, c)
		return nil
	}
	res := newReservoir(d.Sample)
	digest, total, err := readRecords(d.Path, f, func(r record) error {
		if d.SplitField != "" {
			v, ok := r.fields[d.SplitField]
			if !ok {
				return &DataError{File: d.Path, Line: r.line, Field: d.SplitField, Msg: "missing (dataset.split_field names it)"}
			}
			if fmt.Sprint(v) != split {
				return nil
			}
		}
		if res != nil {
			res.offer(r)
			return nil
		}
		if err := take(r); err != nil {
			return err
		}
		if d.Limit > 0 && len(out) >= int(d.Limit) {
			return errEnough
		}
		return nil
	})
	if errors.Is(err, errEnough) {
		// The rest of the file still counts in its digest and its size.
		digest, total, err = digestOf(d.Path, dataPath)
	}
	if err != nil {
		return nil, DatasetRef{}, err
	}
	if total == 0 {
		// Said here, not left to the suite's "no case is in split": the
		// split is not what went wrong, the file is (an export that failed,
		// the wrong path).
		return nil, DatasetRef{}, &DataError{File: d.Path, Msg: "holds no records: a dataset needs at least one"}
	}
	if res != nil {
		for _, r := range res.records() {
			if err := take(r); err != nil {
				return nil, DatasetRef{}, err
			}
		}
	}
	return out, DatasetRef{Path: d.Path, Digest: digest, Records: total, Selected: len(out)}, nil
}

// errEnough stops reading once a limit is reached.
var errEnough = errors.New("enough records")

func digestOf(name, path string) (events.Digest, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("dataset.path: %w", err)
	}
	defer f.Close()
	return readRecords(name, f, func(record) error { return nil })
}

// renderCase fills the template with one record and parses the result as
// a case whose errors name the record's line.
func renderCase(d *Dataset, tpl *template.Template, r record, tplDir string, confine cases.Confine) (*cases.Case, error) {
	id := ""
	if d.ID != "" {
		v, ok := r.fields[d.ID]
		if !ok {
			return nil, &DataError{File: d.Path, Line: r.line, Field: d.ID, Msg: "missing (dataset.id names it)"}
		}
		id = fmt.Sprint(v)
	} else {
		sum := sha256.Sum256(r.raw)
		id = "r-" + hex.EncodeToString(sum[:6])
	}
	if err := events.ValidateToken("id", id); err != nil {
		return nil, &DataError{File: d.Path, Line: r.line, Field: d.ID, Msg: err.Error()}
	}
	data := make(map[string]any, len(r.fields)+1)
	for k, v := range r.fields {
		data[k] = v
	}
	if _, taken := data["case_id"]; !taken {
		data["case_id"] = id
	}
	var buf bytes.Buffer
	if err := tpl.Execute(&buf, data); err != nil {
		return nil, &DataError{File: d.Path, Line: r.line, Msg: fmt.Sprintf("template %s: %v", d.Template, templateErr(err))}
	}
	name := fmt.Sprintf("%s:%d (%s)", d.Path, r.line, d.Template)
	c, err := cases.ParseCaseAt(name, tplDir, buf.Bytes(), confine)
	if err != nil {
		return nil, err
	}
	if c.ID != id {
		if v, ok := r.fields["case_id"]; ok && d.ID != "case_id" {
			return nil, &DataError{File: d.Path, Line: r.line, Field: "case_id", Msg: fmt.Sprintf(
				"the record's own field case_id (%q) hides the case's ID %q that {{.case_id}} writes: rename the field, or make it the ID with dataset.id: case_id", fmt.Sprint(v), id)}
		}
		return nil, &DataError{File: d.Path, Line: r.line, Msg: fmt.Sprintf("the template made case id %q, want %q: write id: {{.case_id}}", c.ID, id)}
	}
	return c, nil
}

// templateErr shortens text/template's error to what a dataset author
// needs: which key the record lacks.
func templateErr(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "map has no entry for key "); i >= 0 {
		return "the record has no field " + strings.TrimPrefix(msg[i:], "map has no entry for key ")
	}
	return msg
}

// templateFuncs are the template's helpers. yaml quotes a value as a YAML
// string (JSON's quoting is valid YAML), so free text with colons or
// newlines cannot break the case file.
var templateFuncs = template.FuncMap{
	"yaml": func(v any) (string, error) {
		text, err := valueText(v)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(text)
		return string(b), err
	},
}

// valueText is the text a record's value stands for. A JSON Lines record
// keeps its JSON types, so an object or an array is written as its JSON
// text, not as Go prints the map or slice it was decoded into; a null has
// no text at all, and writing "<nil>" would put a word nobody wrote into
// the case.
func valueText(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", errors.New("the value is null, which has no text to write (give the record a value, or leave the field out of the template)")
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// The text goes into a case as written; "<" must stay "<", not \u003c.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("writing the value as JSON: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// reservoir keeps a uniform random sample of N records with a seeded
// generator: it reads the file once and holds only N records, and the same
// file and seed always keep the same ones.
type reservoir struct {
	n    int
	rng  *rand.Rand
	seen int
	kept []record
}

func newReservoir(s *Sample) *reservoir {
	if s == nil {
		return nil
	}
	return &reservoir{n: int(s.N), rng: rand.New(rand.NewPCG(s.Seed, s.Seed^0x5eed))}
}

func (s *reservoir) offer(r record) {
	s.seen++
	if len(s.kept) < s.n {
		s.kept = append(s.kept, r)
		return
	}
	if j := s.rng.IntN(s.seen); j < s.n {
		s.kept[j] = r
	}
}

// records returns the kept records in file order.
func (s *reservoir) records() []record {
	slices.SortFunc(s.kept, func(a, b record) int { return a.line - b.line })
	return s.kept
}
