package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file the command was given that is missing or malformed is named,
// with exit status 2, but with no pointer to --help: the call was right,
// the file was not, and the help says nothing about the file.
func TestAFileErrorNamesTheFileWithoutAHelpHint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\ntrials: ten\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", missing}, "missing.yaml"},
		{[]string{"run", bad}, "bad.yaml"},
		{[]string{"serve", "--services", "runner", "--store", t.TempDir(), "--extensions", missing}, "missing.yaml"},
		{[]string{"tail", "--nats", "nats://127.0.0.1:1", "--creds", missing}, "missing.yaml"},
		{[]string{"tail", "--nats", "nats://127.0.0.1:1", "--nkey", missing}, "missing.yaml"},
		{[]string{"tail", "--nats", "nats://127.0.0.1:1", "--user", "u", "--password-file", missing}, "missing.yaml"},
		{[]string{"regrade", "s1", "--grading", missing, "--store", t.TempDir()}, "missing.yaml"},
		{[]string{"tail", "--nats", "nats://127.0.0.1:1", "--creds", dir}, dir},
	} {
		code, out, errOut := runCLI(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("factline %v: exit %d, stdout %q, stderr %q; want exit 2 naming %s", c.args, code, out, errOut, c.want)
		}
		if strings.Contains(errOut, "--help") {
			t.Errorf("factline %v: a file error points at --help: %q", c.args, errOut)
		}
	}
}
