package runner_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/secrets"
	"github.com/factline/factline/services/runner"
)

// A secret that straddles a tool's output cap is cut in two: the part
// before the cut is all the observation would show of it, and redaction,
// which looks for whole values, would not see it. Neither a command's
// output (16 KiB cap) nor a file read (64 KiB cap) may show any of it; the
// bytes held back are counted in the cut mark.
func TestSecretCutByTheOutputCapLeavesNoPart(t *testing.T) {
	const key = "sk-live-0f3b8c2d9e4a7b61"
	e, _ := startWith(t, runner.WithSecrets(secrets.New(secrets.Secret{Name: "CUT_KEY", Value: key})))
	// The commands build the key from two halves, so that the model's
	// arguments (redacted as they come in) still hold the means to print it.
	const build = `k=sk-live-0f3b; k=${k}8c2d9e4a7b61`
	script := `turns:
  - calls:
      - {id: cmd, name: run_command, args: {command: "` + build + `; head -c 16376 /dev/zero | tr '\\0' a; echo $k"}}
      - {id: mk, name: run_command, args: {command: "` + build + `; { head -c 65530 /dev/zero | tr '\\0' a; echo $k; } > big.txt"}}
      - {id: read, name: read_file, args: {path: big.txt}}
`
	log, _ := e.run(fixtureCase(t, "{steps: 2}"), script, "cut")
	seen := 0
	for _, f := range kinds(log, events.KindDispatchComplete) {
		dc := f.Body.(events.DispatchCompleted)
		id := dc.Dispatch.CallID
		if id != "cmd" && id != "read" {
			continue
		}
		seen++
		var obs struct{ Output string }
		if err := json.Unmarshal([]byte(dc.Output), &obs); err != nil {
			t.Fatalf("%s: observation %.200q: %v", id, dc.Output, err)
		}
		head, _, ok := strings.Cut(obs.Output, "\n[output cut: ")
		if !ok {
			t.Errorf("%s: the output is not cut: %.200q", id, obs.Output)
			continue
		}
		for n := 1; n < len(key); n++ {
			if strings.HasSuffix(head, key[:n]) {
				t.Errorf("%s: the output shows the first %d bytes of the secret before its cut: …%q", id, n, head[len(head)-40:])
				break
			}
		}
	}
	if seen != 2 {
		t.Fatalf("%d of the 2 cut calls completed", seen)
	}
}
