package suites

import (
	"bytes"
	"errors"
	"testing"
)

// The data file readers never panic, and whatever they refuse is a
// DataError naming a line.
func FuzzReadRecords(f *testing.F) {
	f.Add([]byte("{\"id\": \"a\", \"q\": \"x\"}\n{\"id\": \"b\"}\n"), false)
	f.Add([]byte("[1, 2]\n"), false)
	f.Add([]byte("{\"a\": 1} {\"b\": 2}\n"), false)
	f.Add([]byte("id,q\na,\"one, two\"\nb,x,extra\n"), true)
	f.Add([]byte("id,id\n1,2\n"), true)
	f.Add([]byte("\"unterminated\n"), true)
	f.Add([]byte("\xef\xbb\xbf{\"id\": \"a\"}\n"), false)
	f.Add([]byte("\xef\xbb\xbfid,q\na,b\n"), true)
	f.Add([]byte("{\"a\": {\"b\": 1, \"b\": 2}, \"c\": [{\"d\": 1, \"d\": 1}]}\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, csv bool) {
		name := "d.jsonl"
		if csv {
			name = "d.csv"
		}
		n := 0
		_, total, err := readRecords(name, bytes.NewReader(data), func(r record) error {
			if r.line < 1 || r.fields == nil {
				t.Fatalf("record %+v", r)
			}
			n++
			return nil
		})
		if err != nil {
			var de *DataError
			if !errors.As(err, &de) || de.Line < 1 {
				t.Fatalf("error %v (%T), want a DataError with a line", err, err)
			}
			return
		}
		if total != n {
			t.Fatalf("%d records counted, %d delivered", total, n)
		}
	})
}
