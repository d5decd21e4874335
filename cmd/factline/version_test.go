package main

import (
	"encoding/json"
	"testing"

	"github.com/factline/factline/version"
)

// factline version and --version print the build's one line; with --json
// the whole build record, for scripts.
func TestVersion(t *testing.T) {
	t.Parallel()
	want := version.Current()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || out != want.String()+"\n" || errOut != "" {
			t.Errorf("factline %v: exit %d, stdout %q, stderr %q; want %q", args, code, out, errOut, want.String())
		}
	}
	code, out, errOut := runCLI(t, "version", "--json")
	var got version.Build
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got != want {
		t.Errorf("version --json: exit %d, %v, %+v (stderr %q); want %+v", code, err, got, errOut, want)
	}
	if code, _, _ := runCLI(t, "version", "extra"); code != 2 {
		t.Errorf("version with an argument: exit %d, want 2", code)
	}
}
