package bus_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/factline/factline/bus"
)

// The golden export of each version reads as the five messages it was
// written with: a change to the reader that stopped reading a file an
// older factline wrote fails here.
func TestTheGoldenExportsRead(t *testing.T) {
	for _, name := range []string{"export-v1.flx", "export-v2.flx"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var subjects []string
		err = bus.ReadExport(bytes.NewReader(data), func(r bus.Raw) error {
			if _, err := r.Fact(); err != nil {
				t.Errorf("%s: entry %d: %v", name, len(subjects)+1, err)
			}
			subjects = append(subjects, r.Subject)
			return nil
		})
		if err != nil || len(subjects) != 5 || subjects[0] != "fact.golden.r1.turn.completed" || subjects[4] != "fact.golden.r2.turn.completed" {
			t.Errorf("%s: read %v, %v; want 5 turns of golden/r1 and r2", name, subjects, err)
		}
	}
}

// exportVersion returns the version an export's header claims, or 0.
func exportVersion(data []byte) int {
	var h struct {
		Version int `msgpack:"version"`
	}
	if msgpack.NewDecoder(bytes.NewReader(data)).Decode(&h) != nil {
		return 0
	}
	return h.Version
}

// FuzzReadExport reads any bytes as an export: it refuses what it
// refuses with an *ExportError, hands on only entries that hold a
// message, and of a version 2 or 3 file it accepts, refuses every shorter
// copy and any copy with a byte after it: a copy that lost its end, or
// was run on past it, never reads as whole.
func FuzzReadExport(f *testing.F) {
	for _, name := range []string{"export-v1.flx", "export-v2.flx", "export-v3.flx"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	read := func(data []byte) (int, error) {
		n := 0
		err := bus.ReadExport(bytes.NewReader(data), func(r bus.Raw) error {
			n++
			if r.Subject == "" || len(r.Data) == 0 {
				return errors.New("an entry without a message was handed on")
			}
			return nil
		})
		return n, err
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := read(data)
		if err != nil {
			var ee *bus.ExportError
			if !errors.As(err, &ee) {
				t.Fatalf("refused with %T, not an *ExportError: %v", err, err)
			}
			return
		}
		if exportVersion(data) < 2 {
			return
		}
		if _, err := read(append(bytes.Clone(data), 0xc0)); !errors.Is(err, bus.ErrExportBadEnd) {
			t.Fatalf("an accepted version 2 export with a byte after it: %v, want ErrExportBadEnd", err)
		}
		// Every shorter copy, or at most 300 of them spread over the file
		// and its last bytes, where a cut is likeliest to be missed.
		step := max(1, len(data)/200)
		for cut := 0; cut < len(data); cut += step {
			if _, err := read(data[:cut]); err == nil {
				t.Fatalf("the first %d of %d bytes of an accepted version 2 export were accepted too", cut, len(data))
			}
		}
		for cut := max(0, len(data)-100); cut < len(data); cut++ {
			if _, err := read(data[:cut]); err == nil {
				t.Fatalf("the first %d of %d bytes of an accepted version 2 export were accepted too", cut, len(data))
			}
		}
	})
}

// A header or an entry whose time is nil, as an edited or damaged file may
// have, is refused or read, never a panic: decoding nil into a time.Time
// panicked inside the msgpack decoder (found by FuzzReadExport), so one
// such map stopped import, replay and every --file reader with a stack
// trace.
func TestAnExportWithANilTimeDoesNotPanic(t *testing.T) {
	enc := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	header := func(created any) []byte {
		return enc(map[string]any{"format": bus.ExportFormat, "version": 1, "stream": "FACTS", "filter": "fact.>", "created": created})
	}
	entry := enc(map[string]any{"seq": 1, "subject": "fact.s.r.run.claimed", "msg_id": "m", "time": nil, "data": []byte{1}})
	for name, data := range map[string][]byte{
		"a header created at nil": header(nil),
		"an entry stored at nil":  append(header(time.Now()), entry...),
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: ReadExport panicked: %v", name, p)
				}
			}()
			n := 0
			err := bus.ReadExport(bytes.NewReader(data), func(r bus.Raw) error {
				n++
				if !r.Time.IsZero() {
					t.Errorf("%s: the entry reads as stored at %v, want the zero time", name, r.Time)
				}
				return nil
			})
			// A version 1 file: nothing else is wrong with either.
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}()
	}
}
