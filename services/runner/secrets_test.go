package runner_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/secrets"
	"github.com/factline/factline/services/runner"
)

// A secret in the runner's environment and one in a file reach the run
// every way they can: the model repeats the key in its text and in a
// command's arguments, the command prints the file, and the provider's
// error quotes the key. Neither appears anywhere on the server (every
// stream's raw messages, every blob) or in the runner's log; the marker
// stands where each would have been.
func TestSecretsNeverReachTheLog(t *testing.T) {
	const keyName = "FACTLINE_TEST_PROVIDER_KEY"
	key := "sk-live-0f3b8c2d9e4a7b61"
	fileSecret := "nats-token-77e1c0a4b2d95f38"
	secretDir := reachableDir(t)
	must(t, os.Chmod(secretDir, 0o755))
	secretFile := filepath.Join(secretDir, "nats.token")
	must(t, os.WriteFile(secretFile, []byte(fileSecret+"\n"), 0o644))
	t.Setenv(keyName, key)
	t.Setenv(secrets.EnvSecretNames, keyName)
	t.Setenv(secrets.EnvSecretFiles, secretFile)

	// The runner builds its redactor from the environment (Config.Secrets
	// nil), as factline serve does. Its commands share the host's /tmp,
	// where the secret file is, so that the command can print it.
	contain := sandbox.DefaultConfig("")
	contain.PrivateTmp, contain.ReadOnlyHost = false, false
	e, logs := startWith(t, runner.WithModels(leakyModels(key)), runner.WithContainment(contain))
	script := fmt.Sprintf(`turns:
  - text: "I will use the key @@SECRET@@ now."
    calls:
      - {id: leak, name: run_command, args: {command: "cat %s; echo arg=@@SECRET@@; echo env=$%s"}}
  - text: "@@FAIL@@"
`, secretFile, keyName)
	log, end := e.run(fixtureCase(t, "{steps: 6}"), script, "leak")

	// The run went the way the test means it to.
	if end.Status != events.RunErrored || !strings.Contains(end.Reason, "invalid api key") {
		t.Fatalf("run ended %s: %q", end.Status, end.Reason)
	}
	keyMark, fileMark := secrets.Marker(keyName), secrets.Marker("nats.token")
	var out string
	for _, f := range kinds(log, events.KindDispatchComplete) {
		out += f.Body.(events.DispatchCompleted).Output
	}
	if !strings.Contains(out, fileMark) || !strings.Contains(out, "arg="+keyMark) {
		t.Errorf("the command's output does not carry the markers: %q", out)
	}
	if strings.Contains(out, "env="+keyMark) {
		t.Errorf("the runner's environment reached the command: %q", out)
	}
	replied := kinds(log, events.KindModelReplied)[0].Body.(events.ModelReplied)
	if !strings.Contains(replied.Text, keyMark) || !strings.Contains(replied.Calls[0].Args, keyMark) {
		t.Errorf("model.replied: text %q, args %q", replied.Text, replied.Calls[0].Args)
	}
	if replied.Calls[0].ArgsDigest != events.DigestOf([]byte(replied.Calls[0].Args)) {
		t.Error("the argument digest is not of the stored (redacted) arguments")
	}
	if !strings.Contains(end.Reason, keyMark) {
		t.Errorf("run.ended reason without the marker: %q", end.Reason)
	}

	forms := func(s string) []string {
		return []string{s, base64.StdEncoding.EncodeToString([]byte(s)), base64.RawStdEncoding.EncodeToString([]byte(s))}
	}
	stored := scanAll(t, e.ctx, e.b)
	if len(stored) < 10 {
		t.Fatalf("only %d stored messages and blobs: the scan read nothing", len(stored))
	}
	for where, data := range stored {
		for _, s := range append(forms(key), forms(fileSecret)...) {
			if strings.Contains(string(data), s) {
				t.Errorf("%s holds a secret (%q)", where, s)
			}
		}
	}
	text := logs.String()
	for _, s := range append(forms(key), forms(fileSecret)...) {
		if strings.Contains(text, s) {
			t.Errorf("the runner's log holds a secret (%q):\n%s", s, text)
		}
	}
	if !strings.Contains(text, keyMark) {
		t.Errorf("the log line of the run's end has no marker:\n%s", text)
	}
}
