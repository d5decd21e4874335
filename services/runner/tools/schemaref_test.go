package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tool's schema comes from an extension's server; a $ref in it to a
// file or a URL was resolved by the schema compiler's default loader,
// which read the file on the runner's host: the file's content then
// showed in BAD_ARGUMENTS messages the model and the log read (a "const"
// quoted back), and a ref to /dev/zero would read forever. Such a schema
// is refused, naming the reference, and nothing is read.
func TestASchemaRefOutsideTheSchemaIsRefusedUnread(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"const":"TOPSECRET-on-the-runner-host"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"file://" + secret, "http://127.0.0.1:9/s.json"} {
		schema := json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"` + ref + `"}}}`)
		s, err := compileNew("ext__peek", schema)
		if err == nil {
			verr := s.Validate(map[string]any{"x": "q"})
			t.Fatalf("%s: the schema compiled (validation says %v)", ref, verr)
		}
		if !strings.Contains(err.Error(), ref) || !strings.Contains(err.Error(), "loads no schema") {
			t.Errorf("%s: the error does not name the reference and why: %v", ref, err)
		}
		if strings.Contains(err.Error(), "TOPSECRET") {
			t.Errorf("%s: the file was read: %v", ref, err)
		}
	}
	// A reference inside the schema itself still resolves.
	local := json.RawMessage(`{"type":"object","$defs":{"s":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/s"}}}`)
	if _, err := compileNew("ext__local", local); err != nil {
		t.Fatalf("a local $ref: %v", err)
	}
}

// A schema that is no valid JSON Schema is refused on one line naming the
// tool and what is wrong, not the compiler's tree of lines about its own
// URL.
func TestAnInvalidSchemaSaysWhatIsWrongOnOneLine(t *testing.T) {
	_, err := compileNew("ext__bad", json.RawMessage(`{"type":"object","required":5}`))
	const want = "tool ext__bad: its inputSchema is not a valid JSON Schema: at '/required': got number, want array"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}
