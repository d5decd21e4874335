package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file a command is given that is missing is a mistake in the call's
// file (exit 2, naming it; no --help line), as docs/cli.md's table says,
// for every command that reads one; and import refuses a file it cannot
// read before it makes a store directory for it.
func TestAMissingInputFileIsExitTwoNamingIt(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "gone.flx")
	store := filepath.Join(t.TempDir(), "new-store")
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte("stall:\n  repeated_observation: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"import", "--store", store, missing},
		{"decode", missing},
		{"replay", "history", "--file", missing},
		{"whatif", "--file", missing, "--suite", "../../examples/demo/suite.yaml", "--policy", policy},
		{"view", "--file", missing},
		{"trace", "--file", missing, "--otlp-endpoint", "http://127.0.0.1:1"},
		{"audit", "--store", t.TempDir(), "--sink-records", missing},
		{"audit", "--file", missing},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, missing) || strings.Contains(errOut, "--help") {
			t.Errorf("factline %v: exit %d, stdout %q, stderr %q; want 2 naming %s", args, code, out, errOut, missing)
		}
	}

	// Given but malformed: exit 2 naming it, and no store made for it.
	bad := filepath.Join(t.TempDir(), "bad-policy.yaml")
	garbage := filepath.Join(t.TempDir(), "garbage.flx")
	for path, body := range map[string]string{bad: "repeated_failure: 2\n", garbage: "this is no export\n"} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		file string
	}{
		{[]string{"whatif", "--store", t.TempDir(), "--policy", bad}, bad},
		{[]string{"import", "--store", store, garbage}, garbage},
	} {
		code, out, errOut := runCLI(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.file) || strings.Contains(errOut, "--help") {
			t.Errorf("factline %v: exit %d, stdout %q, stderr %q; want 2 naming %s", c.args, code, out, errOut, c.file)
		}
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("an import of a file it could not read made the store directory %s (%v)", store, err)
	}
}

// A --metrics address that cannot be bound as written is a usage error
// before any store is opened or service probed.
func TestAMetricsAddressThatCannotBeBoundIsAUsageError(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"nonsense:xx", "127.0.0.1:99999", "127.0.0.1:-1"} {
		store := filepath.Join(t.TempDir(), "s")
		code, out, errOut := runCLI(t, "serve", "--services", "meter", "--store", store, "--metrics", addr)
		if code != 2 || out != "" || !strings.Contains(errOut, "--metrics") {
			t.Errorf("--metrics %s: exit %d, stdout %q, stderr %q; want 2 naming --metrics", addr, code, out, errOut)
		}
		if _, err := os.Stat(store); !os.IsNotExist(err) {
			t.Errorf("--metrics %s: the store was opened before the flag was checked", addr)
		}
	}
}
