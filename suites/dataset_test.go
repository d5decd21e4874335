package suites

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestADatasetMakesACasePerRecordOfTheSplit(t *testing.T) {
	s, err := Load("../examples/dataset/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range s.Cases {
		ids = append(ids, c.ID)
	}
	if want := []string{"add-2-3", "mul-4-6", "sub-9-7", "div-8-2"}; !slices.Equal(ids, want) {
		t.Fatalf("cases %v, want %v (the dev records, in file order)", ids, want)
	}
	if in := s.Cases[2].Instruction; !strings.HasPrefix(in, "What is 9 − 7? Answer: a number. Write the answer") {
		t.Fatalf("instruction %q: free text with a colon must come through whole", in)
	}
	if d := s.Dataset; d == nil || d.Records != 6 || d.Selected != 4 || !strings.HasPrefix(string(d.Digest), "sha256:") {
		t.Fatalf("dataset ref %+v, want 6 records, 4 selected, a digest", d)
	}
	if !filepath.IsAbs(s.Cases[0].Fixture) {
		t.Fatalf("fixture %q, want resolved against the template's directory", s.Cases[0].Fixture)
	}
}

// datasetSuite writes a suite whose cases come from data (file name
// decides the format) through tmpl, with the given extra dataset keys.
func datasetSuite(t *testing.T, name, data, tmpl, extra string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, name), data)
	write(t, filepath.Join(dir, "case.tmpl"), tmpl)
	write(t, filepath.Join(dir, "t.yaml"), "id: t\nmodel: {provider: openai, name: m, base_url: 'http://127.0.0.1:1/v1'}\n")
	suite := fmt.Sprintf("name: ds\ndataset:\n  path: %s\n  template: case.tmpl\n%streatments: [{path: t.yaml}]\n", name, extra)
	write(t, filepath.Join(dir, "suite.yaml"), suite)
	return filepath.Join(dir, "suite.yaml")
}

const plainTmpl = "id: {{.case_id}}\ninstruction: {{yaml .q}}\n"

func caseIDs(t *testing.T, path string) []string {
	t.Helper()
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range s.Cases {
		ids = append(ids, c.ID)
	}
	return ids
}

func TestACSVDatasetReadsItsHeaderAndQuotedFields(t *testing.T) {
	path := datasetSuite(t, "d.csv", "id,q\na,\"one, two\"\nb,\"three\nlines\"\nc,four\n", plainTmpl, "  id: id\n")
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cases) != 3 || s.Cases[0].Instruction != "one, two" || s.Cases[1].Instruction != "three\nlines" || s.Cases[2].ID != "c" {
		t.Fatalf("cases %+v", s.Cases)
	}
}

func TestLimitAndSampleSelectRecordsReproducibly(t *testing.T) {
	var data strings.Builder
	for i := range 50 {
		fmt.Fprintf(&data, "{\"id\": \"r%02d\", \"q\": \"question %d\"}\n", i, i)
	}
	first := caseIDs(t, datasetSuite(t, "d.jsonl", data.String(), plainTmpl, "  id: id\n  limit: 3\n"))
	if !slices.Equal(first, []string{"r00", "r01", "r02"}) {
		t.Fatalf("limit 3: %v", first)
	}
	a := caseIDs(t, datasetSuite(t, "d.jsonl", data.String(), plainTmpl, "  id: id\n  sample: {n: 5, seed: 7}\n"))
	b := caseIDs(t, datasetSuite(t, "d.jsonl", data.String(), plainTmpl, "  id: id\n  sample: {n: 5, seed: 7}\n"))
	c := caseIDs(t, datasetSuite(t, "d.jsonl", data.String(), plainTmpl, "  id: id\n  sample: {n: 5, seed: 8}\n"))
	if len(a) != 5 || !slices.Equal(a, b) || slices.Equal(a, c) || !slices.IsSorted(a) {
		t.Fatalf("sample seed 7: %v and %v (want equal, sorted), seed 8: %v (want different)", a, b, c)
	}
}

// Without an id field, a case's ID comes from its record's content: the
// same record keeps its ID when the file is reordered.
func TestADefaultIDFollowsTheRecordNotItsLine(t *testing.T) {
	one := caseIDs(t, datasetSuite(t, "d.jsonl", "{\"q\": \"a\"}\n{\"q\": \"b\"}\n", plainTmpl, ""))
	two := caseIDs(t, datasetSuite(t, "d.jsonl", "{\"q\": \"b\"}\n{\"q\": \"a\"}\n", plainTmpl, ""))
	if len(one) != 2 || one[0] != two[1] || one[1] != two[0] || !strings.HasPrefix(one[0], "r-") {
		t.Fatalf("ids %v and %v", one, two)
	}
}

func TestABadDatasetIsRefusedNamingLineAndField(t *testing.T) {
	for _, c := range []struct{ name, data, tmpl, extra, want string }{
		{"d.jsonl", "{\"id\": \"a\", \"q\": \"x\"}\n{\"id\": \"b\"}\n", plainTmpl, "  id: id\n", "d.jsonl:2: template case.tmpl: the record has no field \"q\""},
		{"d.jsonl", "{\"id\": \"a\", \"q\": \"x\"}\n\n{\"id\": \"a\", \"q\": \"y\"}\n", plainTmpl, "  id: id\n", `d.jsonl:3: id: case id "a" is also the record on line 1`},
		{"d.jsonl", "{\"id\": \"a\", \"q\": \"x\"}\n[1, 2]\n", plainTmpl, "  id: id\n", "d.jsonl:2: not a JSON object: got an array"},
		{"d.jsonl", "{\"q\": \"x\"}\n", plainTmpl, "  id: id\n", "d.jsonl:1: id: missing (dataset.id names it)"},
		{"d.jsonl", "{\"id\": \"a b\", \"q\": \"x\"}\n", plainTmpl, "  id: id\n", "d.jsonl:1: id:"},
		{"d.jsonl", "{\"id\": \"a\", \"q\": \"x\"}\n", "id: other\ninstruction: x\n", "  id: id\n", `the template made case id "other", want "a"`},
		{"d.jsonl", "{\"id\": \"a\", \"q\": \"x\"}\n", "id: {{.case_id}}\ninstruction: {{yaml .q}}\nbudget: {steps: 1.5}\n", "  id: id\n", "d.jsonl:1 (case.tmpl)"},
		{"d.csv", "id,q\na,x\nb,x,extra\n", plainTmpl, "  id: id\n", "d.csv:3: "},
		{"d.jsonl", "{\"id\": \"a\", \"q\": \"x\"}\n", plainTmpl, "  id: id\n  split_field: split\n", "d.jsonl:1: split: missing"},
		{"d.txt", "", plainTmpl, "", "dataset.path: want a .jsonl or .csv file"},
		{"d.jsonl", "", plainTmpl, "  limit: 2\n  sample: {n: 1, seed: 1}\n", "dataset.sample: give limit or sample, not both"},
		{"d.jsonl", "", "{{.q", "", "dataset.template"},
	} {
		_, err := Load(datasetSuite(t, c.name, c.data, c.tmpl, c.extra))
		if err == nil || !errors.Is(err, ErrInvalid) && !strings.Contains(err.Error(), "dataset") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: got %v, want %q", c.name, c.data, err, c.want)
		}
	}
}

// The dataset's digest is part of the spec: other data is another suite.
func TestTheDatasetDigestFollowsTheData(t *testing.T) {
	a, err := Load(datasetSuite(t, "d.jsonl", "{\"id\": \"a\", \"q\": \"x\"}\n", plainTmpl, "  id: id\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(datasetSuite(t, "d.jsonl", "{\"id\": \"a\", \"q\": \"y\"}\n", plainTmpl, "  id: id\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Dataset.Digest == b.Dataset.Digest {
		t.Fatal("two data files gave one digest")
	}
	if _, err := os.Stat("../examples/dataset/data/arith.jsonl"); err != nil {
		t.Fatal(err)
	}
}

// A data file saved with a UTF-8 byte order mark (as some editors and
// spreadsheet exports write one) reads as without it, in JSONL and in
// CSV: not an error, and not a first column whose name silently starts
// with an invisible character. The mark still counts in the file's digest.
func TestAByteOrderMarkIsSkipped(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	for _, c := range []struct{ name, data string }{
		{"d.jsonl", "{\"id\": \"a\", \"q\": \"x\"}\n{\"id\": \"b\", \"q\": \"y\"}\n"},
		{"d.csv", "id,q\na,x\nb,y\n"},
	} {
		plain, err := Load(datasetSuite(t, c.name, c.data, plainTmpl, "  id: id\n"))
		if err != nil {
			t.Fatalf("%s without a mark: %v", c.name, err)
		}
		marked, err := Load(datasetSuite(t, c.name, bom+c.data, plainTmpl, "  id: id\n"))
		if err != nil {
			t.Errorf("%s with a byte order mark: %v", c.name, err)
			continue
		}
		if len(marked.Cases) != 2 || marked.Cases[0].ID != "a" || marked.Cases[0].Instruction != "x" {
			t.Errorf("%s with a byte order mark: cases %+v", c.name, marked.Cases)
		}
		if marked.Dataset.Digest == plain.Dataset.Digest || marked.Dataset.Records != 2 {
			t.Errorf("%s: the mark must count in the digest (%s) and leave 2 records (%d)", c.name, marked.Dataset.Digest, marked.Dataset.Records)
		}
	}
}

// A line longer than a reader takes is an error that names the line and
// the limit, for JSONL and CSV alike (CSV had no limit, and held the line
// whole, however long).
func TestALineOverTheLimitIsRefusedNamingLineAndLimit(t *testing.T) {
	long := strings.Repeat("x", MaxDataLine+1)
	for _, c := range []struct{ name, data, want string }{
		{"d.jsonl", "{\"id\": \"a\", \"q\": \"x\"}\n{\"id\": \"b\", \"q\": \"" + long + "\"}\n", "d.jsonl:2: the line is longer than the limit of 1048576 bytes"},
		{"d.csv", "id,q\na,x\nb," + long + "\n", "d.csv:3: the line is longer than the limit of 1048576 bytes"},
		{"d.csv", "id,q\na,\"x\n" + long + "\"\n", "d.csv:3: the line is longer than the limit of 1048576 bytes"},
	} {
		_, err := Load(datasetSuite(t, c.name, c.data, plainTmpl, "  id: id\n"))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "token too long") {
			t.Errorf("%s with a line of %d bytes: %v, want %q", c.name, len(long), err, c.want)
		}
	}
}

// A JSON record that names a key twice is refused, naming the line and
// the key (at any depth): JSON leaves it to the reader which value
// counts, and the record's author meant one.
func TestAJSONRecordWithADuplicateKeyIsRefused(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{"{\"id\": \"a\", \"q\": \"x\"}\n{\"id\": \"b\", \"q\": \"y\", \"q\": \"z\"}\n", `d.jsonl:2: q: the key is in the record twice`},
		{"{\"id\": \"a\", \"q\": \"x\", \"meta\": {\"n\": 1, \"n\": 2}}\n", `d.jsonl:1: meta.n: the key is in the record twice`},
		{"{\"id\": \"a\", \"q\": \"x\", \"list\": [{\"k\": 1}, {\"k\": 2, \"k\": 3}]}\n", `d.jsonl:1: list[1].k: the key is in the record twice`},
	} {
		_, err := Load(datasetSuite(t, "d.jsonl", c.data, plainTmpl, "  id: id\n"))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.data, err, c.want)
		}
	}
	// The same key in two objects is no duplicate.
	if ids := caseIDs(t, datasetSuite(t, "d.jsonl", "{\"id\": \"a\", \"q\": \"x\", \"l\": [{\"k\": 1}, {\"k\": 2}]}\n", plainTmpl, "  id: id\n")); len(ids) != 1 {
		t.Fatalf("ids %v", ids)
	}
}
