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

	"github.com/factline/factline/events"
)

// docs/readfact.js reads facts as a reader in another
// language would, from docs/facts.md alone (its own msgpack decoder, no
// package). Every golden file of every envelope version must read there as
// it reads here (events.WireMap), and the versions of one fixture must read
// as the same fact.
func TestTheForeignNodeReaderReadsEveryVersion(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed on this host: the foreign reader cannot run")
	}
	paths := map[string]string{} // "v1/name", "v2/name" or "v3/name" -> path
	for dir, tag := range map[string]string{goldenDir: "v1", goldenV2Dir: "v2", goldenV3Dir: "v3"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.msgpack"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no golden files in %s: %v", dir, err)
		}
		for _, p := range files {
			paths[tag+"/"+strings.TrimSuffix(filepath.Base(p), ".msgpack")] = p
		}
	}
	args := []string{"../docs/readfact.js"}
	byPath := map[string]string{}
	for key, p := range paths {
		args = append(args, p)
		byPath[p] = key
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command(node, args...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	read := map[string]any{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			File string
			Fact any
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("node printed %q: %v", sc.Text(), err)
		}
		read[byPath[line.File]] = line.Fact
	}
	if len(read) != len(paths) {
		t.Fatalf("node read %d files of %d", len(read), len(paths))
	}
	for key, p := range paths {
		want := goWireJSON(t, p)
		if !reflect.DeepEqual(read[key], want) {
			t.Errorf("%s: node read\n  %v\nGo reads\n  %v", key, read[key], want)
		}
		for _, later := range []string{"v2/", "v3/"} {
			if name, ok := strings.CutPrefix(key, later); ok {
				if v1, ok := read["v1/"+name]; ok && !reflect.DeepEqual(v1, read[key]) {
					t.Errorf("%s: version 1 and %s read as different facts:\n  %v\n  %v", name, later, v1, read[key])
				}
			}
		}
	}
}

// goWireJSON is what Go's generic reader makes of a stored fact, as JSON
// values: the form the foreign reader prints.
func goWireJSON(t *testing.T, path string) any {
	t.Helper()
	m, err := events.WireMap(readFile(t, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if at, ok := m["at"].(time.Time); ok {
		m["at"] = at.UTC()
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
