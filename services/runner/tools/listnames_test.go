package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Workspace names may hold any byte but NUL and '/'. list_files prints one
// path per line, so a name with a newline would read as two entries (and
// "a\nb.txt" beside "a" and "b.txt" could not be told from them); such a
// name is shown quoted, and the quoted form, as JSON, is the path that
// reads the file.
func TestListFilesShowsEveryNameOnOneLine(t *testing.T) {
	env, dir := testEnv(t)
	for _, name := range []string{"a", "b.txt", "a\nb.txt", "tab\there", `"quoted"`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "d\nir"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := NewRegistry([]string{"list_files", "read_file"})
	if err != nil {
		t.Fatal(err)
	}
	res := call(t, r, env, "list_files", `{}`)
	if res.Err != nil {
		t.Fatalf("list_files: %+v", res.Err)
	}
	lines := strings.Split(res.Output, "\n")
	want := []string{`"\"quoted\""`, `"a\nb.txt"`, `"d\nir/"`, `"tab\there"`, "a", "b.txt"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Fatalf("list_files shows %q, want %q", lines, want)
	}
	// The model reads a listed name back by passing it as a JSON string.
	got := call(t, r, env, "read_file", `{"path":`+lines[1]+`}`)
	if got.Err != nil || got.Output != "a\nb.txt" {
		t.Fatalf("read_file of the listed %s: %q, %+v", lines[1], got.Output, got.Err)
	}
	var back string
	if err := json.Unmarshal([]byte(lines[0]), &back); err != nil || back != `"quoted"` {
		t.Fatalf("the listed %s is not the name %q as JSON: %q, %v", lines[0], `"quoted"`, back, err)
	}
}
