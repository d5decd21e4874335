package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner/extensions"
	"github.com/factline/factline/services/runner/extensions/extensionstest"
)

// A tool whose input schema is no valid JSON Schema is the extension's
// fault, found at start: the run ends extension_failed, and the reason
// names the extension, the tool and what is wrong with the schema once.
func TestExtensionToolWithAnInvalidSchemaFailsTheStartNamingIt(t *testing.T) {
	t.Parallel()
	bin := extensionstest.BuildServer(t)
	f := extensionstest.NewFiles(t)
	digest, err := extensions.FileDigest(bin)
	must(t, err)
	e := startWithExtensions(t, testAllowlist(t, bin, f, fmt.Sprintf(`  - name: badsrv
    command: %s
    args: ["-bad-schema"]
    digest: %s
    tools:
      - {name: badschema, effect: read}
`, bin, digest)))
	k := fixtureCase(t, "{steps: 6}")
	k.Extensions = []string{"badsrv"}
	_, end := e.run(k, "turns:\n  - calls: [{name: task_complete, args: {status: done}}]\n", "bad-schema")
	const want = "extension_failed: badsrv: tool badsrv__badschema: its inputSchema is not a valid JSON Schema: "
	if end.Status != events.RunErrored || !strings.HasPrefix(end.Reason, want) || !strings.Contains(end.Reason, "/required") {
		t.Fatalf("ended %s/%q, want errored with %q and what is wrong (at /required)", end.Status, end.Reason, want)
	}
	if n := strings.Count(end.Reason, "badschema"); n != 1 {
		t.Errorf("the reason names the tool %d times: %s", n, end.Reason)
	}
}
