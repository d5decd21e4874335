package events_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// nodeReader runs docs/readfact.js on files and returns its exit status,
// its JSON lines and its standard error.
func nodeReader(t *testing.T, files ...string) (code int, lines []map[string]any, stderr string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (scripts/test-deps installs it with npm): %v", err)
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(node, append([]string{"../docs/readfact.js"}, files...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("node printed %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return code, lines, errOut.String()
}

// An analyst without the nats CLI has what 'factline export' writes: the
// foreign reader reads an export file (docs/operations.md, "Export and
// import") as one line per entry with its sequence and subject, each fact
// as Go reads it.
func TestTheForeignNodeReaderReadsAnExport(t *testing.T) {
	names := []string{"run_claimed", "stop_decided_finish", "grade_verdict_passed"}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	if err := enc.Encode(map[string]any{"format": "factline-export", "version": 1, "stream": "FACTS", "filter": "fact.>", "created": time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		data := readFile(t, filepath.Join(goldenV3Dir, name+".msgpack"))
		e := map[string]any{"seq": 10 + i, "subject": "fact.s.r." + name, "msg_id": name, "time": time.Now(), "data": data}
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	export := filepath.Join(t.TempDir(), "log.flx")
	if err := os.WriteFile(export, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, lines, stderr := nodeReader(t, export)
	if code != 0 || len(lines) != len(names) {
		t.Fatalf("node on an export: exit %d, %d lines, want 0 and %d\n%s", code, len(lines), len(names), stderr)
	}
	for i, name := range names {
		l := lines[i]
		want := goWireJSON(t, filepath.Join(goldenV3Dir, name+".msgpack"))
		if l["file"] != export || l["seq"] != float64(10+i) || l["subject"] != "fact.s.r."+name || !reflect.DeepEqual(l["fact"], want) {
			t.Errorf("entry %d: node printed %v\nwant the fact %v", i+1, l, want)
		}
	}
}

// A file that holds no fact — a fact with bytes after it, an empty file, a
// map that is not a fact, an export cut short — is named on standard error
// with what is wrong, the other files are still read, and the exit status
// is 1. It was a stack trace (TypeError: Cannot convert undefined to a
// BigInt) that stopped at the first such file, or a silent success that
// ignored the bytes after the first value.
func TestTheForeignNodeReaderNamesAFileThatHoldsNoFact(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(goldenV3Dir, "run_claimed.msgpack")
	fact := readFile(t, good)
	notFact, err := msgpack.Marshal(map[string]any{"format": "something else", "version": 1})
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	enc := msgpack.NewEncoder(&export)
	if err := enc.Encode(map[string]any{"format": "factline-export", "version": 1, "stream": "FACTS", "filter": "fact.>", "created": time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(map[string]any{"seq": 1, "subject": "fact.s.r.run.claimed", "msg_id": "m", "time": time.Now(), "data": fact}); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"trailing.msgpack": append(append([]byte{}, fact...), fact[:5]...),
		"empty.msgpack":    {},
		"notfact.msgpack":  notFact,
		"cut.flx":          export.Bytes()[:export.Len()-10],
	}
	wants := map[string]string{
		"trailing.msgpack": "bytes after",
		"empty.msgpack":    "empty",
		"notfact.msgpack":  "not a fact",
		"cut.flx":          "entry 1",
	}
	args := []string{}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	args = append(args, good)
	code, lines, stderr := nodeReader(t, args...)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if len(lines) != 1 || lines[0]["file"] != good {
		t.Errorf("node printed %v, want the one good file's fact", lines)
	}
	for name, want := range wants {
		line := ""
		for _, l := range strings.Split(stderr, "\n") {
			if strings.Contains(l, filepath.Join(dir, name)) {
				line = l
			}
		}
		if !strings.Contains(line, want) {
			t.Errorf("%s: standard error says %q, want a line naming the file and %q\n%s", name, line, want, stderr)
		}
	}
	if strings.Contains(stderr, "    at ") {
		t.Errorf("a stack trace instead of a message:\n%s", stderr)
	}
}

// The foreign reader reads what factline stores today, envelope version 4,
// with the suite and run of the message's subject: --subject before a
// message file, an export's entry its own. Each reads as the fixture's
// version 3 file does; without a subject the file is named on standard
// error as needing one, and the exit status is 1.
func TestTheForeignNodeReaderReadsVersion4WithItsSubject(t *testing.T) {
	var args []string
	var want []any
	for _, c := range goldenFacts(t) {
		args = append(args, "--subject", goldenSubject(t, c.fact), filepath.Join(goldenV4Dir, c.name+".msgpack"))
		want = append(want, goWireJSON(t, filepath.Join(goldenV3Dir, c.name+".msgpack")))
	}
	bare := filepath.Join(goldenV4Dir, "run_claimed.msgpack")
	code, lines, stderr := nodeReader(t, append(args, bare)...)
	if code != 1 || len(lines) != len(want) {
		t.Fatalf("exit %d and %d lines, want 1 (the file without a subject) and %d\n%s", code, len(lines), len(want), stderr)
	}
	for i, l := range lines {
		if !reflect.DeepEqual(l["fact"], want[i]) || l["subject"] != args[3*i+1] {
			t.Errorf("%s: node printed %v\nwant the fact %v", args[3*i+2], l, want[i])
		}
	}
	if !strings.Contains(stderr, bare+": envelope version 4") || !strings.Contains(stderr, "--subject") {
		t.Errorf("the file without a subject is not named as needing one:\n%s", stderr)
	}

	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	if err := enc.Encode(map[string]any{"format": "factline-export", "version": 1, "stream": "FACTS", "filter": "fact.>", "created": time.Now()}); err != nil {
		t.Fatal(err)
	}
	f := goldenFact(t, "grade_verdict_passed")
	subject := goldenSubject(t, f)
	if err := enc.Encode(map[string]any{"seq": 7, "subject": subject, "msg_id": "m", "time": time.Now(),
		"data": readFile(t, filepath.Join(goldenV4Dir, "grade_verdict_passed.msgpack"))}); err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(t.TempDir(), "log.flx")
	if err := os.WriteFile(export, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, lines, stderr = nodeReader(t, export)
	wantFact := goWireJSON(t, filepath.Join(goldenV3Dir, "grade_verdict_passed.msgpack"))
	if code != 0 || len(lines) != 1 || !reflect.DeepEqual(lines[0]["fact"], wantFact) {
		t.Fatalf("an export of a version 4 fact: exit %d, %v\nwant the fact %v\n%s", code, lines, wantFact, stderr)
	}
}
