package extensions_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/factline/factline/secrets"
	"github.com/factline/factline/services/runner/extensions"
)

// startScript starts a one-extension set whose server is the shell script
// body, named name, with the redactor r.
func startScript(t *testing.T, name, body string, r *secrets.Redactor) error {
	t.Helper()
	script := t.TempDir() + "/" + name
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := extensions.FileDigest(script)
	if err != nil {
		t.Fatal(err)
	}
	l, err := extensions.Parse("ext.yaml", []byte(fmt.Sprintf("extensions:\n  - name: %s\n    command: %s\n    digest: %s\n    start_timeout: 20s\n    tools:\n      - {name: x, effect: read}\n", name, script, d)))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := extensions.Admit(l, []string{name})
	if err != nil {
		t.Fatal(err)
	}
	set, err := extensions.Start(context.Background(), entries, extensions.Options{Dir: t.TempDir(), LogDir: t.TempDir(),
		Environ: []string{"PATH=" + os.Getenv("PATH")}, Secrets: r})
	if err == nil {
		set.Stop()
		t.Fatal("the server started")
	}
	var se *extensions.StartError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a StartError", err)
	}
	return err
}

// The end of a server's standard error explains its failure, cut from
// its front: a secret it wrote right before the cut is cut in two, and
// the part after the cut, which redaction does not know, is left out.
func TestStderrTailShowsNoPartOfASecret(t *testing.T) {
	const key = "sk-live-0f3b8c2d9e4a7b61"
	r := secrets.New(secrets.Secret{Name: "TAIL_KEY", Value: key})
	// 500 bytes follow the key: a 512-byte tail begins 12 bytes into it.
	err := startScript(t, "leaky", "#!/bin/bash\nk=sk-live-0f3b; printf '%s' \"${k}8c2d9e4a7b61\" >&2\nhead -c 500 /dev/zero | tr '\\0' a >&2\nexit 3\n", r)
	if !strings.Contains(err.Error(), strings.Repeat("a", 500)) {
		t.Fatalf("the error lacks the end of the server's stderr: %v", err)
	}
	for n := len(key) - 1; n >= 4; n-- {
		if strings.Contains(err.Error(), key[len(key)-n:]) {
			t.Fatalf("the error shows the last %d bytes of the secret: %v", n, err)
		}
	}
}

// A server that writes what is not JSON-RPC on its stdout (a log line, a
// banner) fails to start with a message that says so and quotes the first
// bytes of it, bounded and with secrets redacted, with how its stderr
// ends; the decoder's own words ("invalid character 'h' in literal
// true") were all it said.
func TestServerWritingNonJSONSaysSo(t *testing.T) {
	const key = "sk-live-0f3b8c2d9e4a7b61"
	r := secrets.New(secrets.Secret{Name: "BANNER_KEY", Value: key})
	err := startScript(t, "chatty", "#!/bin/bash\necho 'starting up' >&2\nk=sk-live-0f3b; echo \"this is the server, key ${k}8c2d9e4a7b61 $(head -c 2000 /dev/zero | tr '\\0' x)\"\nsleep 30\n", r)
	msg := err.Error()
	for _, want := range []string{"chatty", "not JSON-RPC", `"this is the server, key [redacted:BANNER_KEY] xxx`, "its stderr ends: starting up"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "sk-live") || strings.Contains(msg, strings.Repeat("x", 400)) {
		t.Errorf("the error quotes the secret or more than a bounded start: %s", msg)
	}
}
