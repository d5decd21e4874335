package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/secrets"
	"github.com/factline/factline/services/runner"
)

// The runner's log line on an external agent shows the end of what it
// printed, cut from the front: a secret the agent printed right before the
// cut is cut in two, and the part after the cut, which redaction (looking
// for whole values) does not know, must not reach the log either.
func TestExternalAgentOutputTailShowsNoPartOfASecret(t *testing.T) {
	t.Parallel()
	const key = "sk-live-0f3b8c2d9e4a7b61"
	e, logs := startWith(t, runner.WithSecrets(secrets.New(secrets.Secret{Name: "TAIL_KEY", Value: key})))
	dir := agentDir(t, "factline-secret-tail-")
	agent := filepath.Join(dir, "agent")
	// The key is built from two halves, so the script holds no whole copy;
	// 4084 bytes follow it, so a 4096-byte tail begins 12 bytes into it.
	script := "#!/bin/bash\nk=sk-live-0f3b; printf '%s' \"${k}8c2d9e4a7b61\"\nhead -c 4084 /dev/zero | tr '\\0' a\nexit 1\n"
	must(t, os.WriteFile(agent, []byte(script), 0o755))
	e.runAgent(fixtureCase(t, "{steps: 4}"), agentTreatment(t, fixScript, agent, "{{.Instruction}}"), "ext-secret-tail")
	var line string
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, "external agent ended") && strings.Contains(l, "run=ext-secret-tail") {
			line = l
		}
	}
	if !strings.Contains(line, strings.Repeat("a", 4000)) {
		t.Fatalf("the runner's line on the agent lacks the end of its output: %.300s", line)
	}
	for n := len(key) - 1; n >= 4; n-- {
		if strings.Contains(line, key[len(key)-n:]) {
			t.Fatalf("the runner's line shows the last %d bytes of the secret: %q", n, key[len(key)-n:])
		}
	}
}
