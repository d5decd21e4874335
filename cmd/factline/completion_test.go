package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// completion prints a script for bash, zsh or fish; the bash one parses
// (bash -n), and the completions it asks the binary for name factline's
// own commands, flags and values.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := runCLI(t, "completion", shell)
		if code != 0 || len(out) < 500 || !strings.Contains(out, "factline") || errOut != "" {
			t.Fatalf("completion %s: exit %d, %d bytes, stderr %q", shell, code, len(out), errOut)
		}
		if shell != "bash" {
			continue
		}
		script := filepath.Join(t.TempDir(), "factline.bash")
		if err := os.WriteFile(script, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		bash, err := exec.LookPath("bash")
		if err != nil {
			t.Fatalf("bash is needed to check the bash completion script: %v", err)
		}
		if msg, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
			t.Fatalf("bash -n on the completion script: %v\n%s", err, msg)
		}
	}
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		if code, _, errOut := runCLI(t, args...); code != 2 || !strings.Contains(errOut, "bash, zsh or fish") {
			t.Errorf("factline %v: exit %d, %q; want 2 naming the shells", args, code, errOut)
		}
	}
	// What the scripts ask the binary for: commands, a flag's values, a
	// projection's name.
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "ta"}, []string{"tail"}},
		{[]string{"__complete", "run", "x.yaml", "--fsync", ""}, []string{"always", "interval"}},
		{[]string{"__complete", "replay", ""}, []string{"runs", "history", "kinds"}},
		{[]string{"__complete", "cancel", "r", "--"}, []string{"--wait", "--store"}},
	} {
		code, out, _ := runCLI(t, c.args...)
		for _, w := range c.want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("factline %v: exit %d, %q; want %q offered", c.args, code, out, w)
			}
		}
	}
	if _, out, _ := runCLI(t, "__complete", "cancel", "r", "--"); strings.Contains(out, "--applied") {
		t.Errorf("cancel offers --applied, which it does not take: %q", out)
	}
}
