package suites

import (
	"strings"
	"testing"
)

// A JSON Lines record keeps its JSON types, so {{yaml .field}} must write
// an object, an array or a big number as the JSON text the author wrote,
// never as Go prints the value it was decoded into ("map[x:[1 <nil>]]").
func TestYAMLWritesAJSONValueAsItsJSONText(t *testing.T) {
	for _, c := range []struct{ value, want string }{
		{`{"x": [1, null], "a": "<b>"}`, `{"a":"<b>","x":[1,null]}`},
		{`[1, 2.50, "three"]`, `[1,2.50,"three"]`},
		{`123456789012345678901234567890`, `123456789012345678901234567890`},
		{`true`, `true`},
		{`"plain: text"`, `plain: text`},
	} {
		data := `{"id": "a", "q": ` + c.value + "}\n"
		s, err := Load(datasetSuite(t, "d.jsonl", data, plainTmpl, "  id: id\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.value, err)
		}
		if got := s.Cases[0].Instruction; got != c.want {
			t.Errorf("{{yaml .q}} of %s wrote %q, want %q", c.value, got, c.want)
		}
	}
}

// A JSON null has no text: writing it as the string "<nil>" would put a
// word nobody wrote into the case, so it is refused naming the record.
func TestYAMLRefusesANullNamingTheRecord(t *testing.T) {
	data := "{\"id\": \"a\", \"q\": \"x\"}\n{\"id\": \"b\", \"q\": null}\n"
	_, err := Load(datasetSuite(t, "d.jsonl", data, plainTmpl, "  id: id\n"))
	if err == nil {
		t.Fatal("a null written with {{yaml .q}} was accepted")
	}
	for _, want := range []string{"d.jsonl:2:", ".q", "null"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// An empty data file (a failed export, the wrong path) is named as what
// it is, not reported as a suite whose split matched no case.
func TestAnEmptyDataFileIsRefusedAsEmpty(t *testing.T) {
	for _, c := range []struct{ name, data string }{
		{"d.jsonl", ""},
		{"d.jsonl", "\n\n"},
		{"d.csv", ""},
		{"d.csv", "id,q\n"},
	} {
		_, err := Load(datasetSuite(t, c.name, c.data, plainTmpl, "  id: id\n"))
		if err == nil || !strings.Contains(err.Error(), "dataset: "+c.name+": holds no records") {
			t.Errorf("%s %q: got %v, want it named as holding no records", c.name, c.data, err)
		}
	}
}

// When a split field leaves no record, the error says so and how many
// records the file held, so the author looks at the split, not the file.
func TestADatasetWithNoRecordOfTheSplitSaysSo(t *testing.T) {
	data := "{\"id\": \"a\", \"q\": \"x\", \"s\": \"holdout\"}\n{\"id\": \"b\", \"q\": \"x\", \"s\": \"test\"}\n"
	_, err := Load(datasetSuite(t, "d.jsonl", data, plainTmpl, "  id: id\n  split_field: s\n"))
	if err == nil || !strings.Contains(err.Error(), `none of the 2 records of d.jsonl has s "dev"`) {
		t.Errorf("got %v, want it to say no record of the 2 has the split", err)
	}
}

// {{.case_id}} is factline's name for the case's ID; a record with a field
// of that name hides it. The error must name that field, not tell an
// author who wrote id: {{.case_id}} to write it.
func TestARecordFieldNamedCaseIDIsNamedWhenItHidesTheID(t *testing.T) {
	data := "{\"id\": \"a\", \"q\": \"x\"}\n{\"id\": \"b\", \"case_id\": \"c\", \"q\": \"x\"}\n"
	_, err := Load(datasetSuite(t, "d.jsonl", data, plainTmpl, "  id: id\n"))
	if err == nil {
		t.Fatal("a record whose case_id field differs from its ID was accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, "d.jsonl:2: case_id:") || !strings.Contains(msg, "dataset.id: case_id") || strings.Contains(msg, "write id:") {
		t.Errorf("got %q, want the record's case_id field named at d.jsonl:2 with the way out (dataset.id: case_id)", msg)
	}
	// A record whose case_id is its ID, or one named by dataset.id, is fine.
	same := "{\"id\": \"a\", \"case_id\": \"a\", \"q\": \"x\"}\n"
	if _, err := Load(datasetSuite(t, "d.jsonl", same, plainTmpl, "  id: id\n")); err != nil {
		t.Errorf("case_id equal to the ID: %v", err)
	}
	named := "{\"case_id\": \"a\", \"q\": \"x\"}\n"
	if _, err := Load(datasetSuite(t, "d.jsonl", named, plainTmpl, "  id: case_id\n")); err != nil {
		t.Errorf("dataset.id: case_id: %v", err)
	}
}
