package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
)

// secretFiles writes, in dir, one file for each flag that names a file
// holding a secret, each as the flag wants it, at mode; it returns the
// flag lines that use them (each with what it needs beside it) by flag.
func secretFiles(t *testing.T, dir string, mode os.FileMode) map[string][]string {
	t.Helper()
	user, _ := nkeys.CreateUser()
	seed, _ := user.Seed()
	_, _, _, cCert, cKey := tlsFiles(t, dir)
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	if err := os.Chmod(cKey, mode); err != nil {
		t.Fatal(err)
	}
	return map[string][]string{
		"--password-file": {"--user", "runner", "--password-file", write("runner.pw", "s3cret-pw-1234\n")},
		"--nkey":          {"--nkey", write("runner.nk", string(seed)+"\n")},
		"--creds": {"--creds", write("runner.creds", "-----BEGIN NATS USER JWT-----\neyJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln\n------END NATS USER JWT------\n\n"+
			"-----BEGIN USER NKEY SEED-----\n"+string(seed)+"\n------END USER NKEY SEED------\n")},
		"--tls-key": {"--tls-cert", cCert, "--tls-key", cKey},
	}
}

// A file holding a secret that other users may read is used, as
// deploy/compose/secrets.sh hands a container's user its password at
// 0444, but not without a word: one warning per file, naming the flag,
// the path, its mode and the fix, like ssh's "UNPROTECTED PRIVATE KEY
// FILE". Before, --password-file, --nkey, --creds and --tls-key at 0644
// were read in silence, while the store's own credential at 0644 is
// refused. A file any user may change is refused (exit 2, nothing
// connects): anyone could have put their own credential in it.
func TestSecretFilesOpenToOthersAreSaid(t *testing.T) {
	t.Parallel()
	url := fmt.Sprintf("nats://127.0.0.1:%d", freePort(t)) // nobody listens: the files are read before the connect fails
	warnLine := regexp.MustCompile(`(?m)^.*level=WARN.*secret file.*$`)

	open := secretFiles(t, filepath.Join(t.TempDir()), 0o644)
	for flag, args := range open {
		path := args[len(args)-1]
		code, _, errOut := factline(t, append([]string{"tail", "--no-follow", "--nats", url}, args...)...)
		lines := warnLine.FindAllString(errOut, -1)
		if len(lines) != 1 {
			t.Errorf("%s at 0644: %d warnings about the file, want 1 (exit %d):\n%s", flag, len(lines), code, errOut)
			continue
		}
		for _, want := range []string{"flag=" + flag, "path=" + path, "mode=0644", "other users may read it", "chmod 600 " + path} {
			if !strings.Contains(lines[0], want) {
				t.Errorf("%s at 0644: the warning lacks %q: %s", flag, want, lines[0])
			}
		}
		if code != 1 || !strings.Contains(errOut, "connect") {
			t.Errorf("%s at 0644: exit %d, want the file used and the connect failing (1):\n%s", flag, code, errOut)
		}
	}

	closed := secretFiles(t, filepath.Join(t.TempDir()), 0o600)
	for flag, args := range closed {
		code, _, errOut := factline(t, append([]string{"tail", "--no-follow", "--nats", url}, args...)...)
		if lines := warnLine.FindAllString(errOut, -1); len(lines) != 0 || code != 1 {
			t.Errorf("%s at 0600: exit %d, warnings %q", flag, code, lines)
		}
	}

	writable := secretFiles(t, filepath.Join(t.TempDir()), 0o666)
	for flag, args := range writable {
		path := args[len(args)-1]
		code, out, errOut := factline(t, append([]string{"tail", "--no-follow", "--nats", url}, args...)...)
		if code != 2 || out != "" || strings.Contains(errOut, "connect") {
			t.Errorf("%s at 0666: exit %d, want 2 before any connect:\n%s", flag, code, errOut)
		}
		for _, want := range []string{flag + " " + path, "mode 0666", "any user may change it", "chmod 600 " + path} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s at 0666: the refusal lacks %q:\n%s", flag, want, errOut)
			}
		}
	}
}

// factlineEnv runs the binary to its end with env added to this
// process's environment; it returns its exit code and stderr.
func factlineEnv(t *testing.T, env []string, args ...string) (code int, stderr string) {
	t.Helper()
	cmd := exec.Command(factlineBin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var errOut strings.Builder
	cmd.Stderr = &errOut
	_ = cmd.Run()
	return cmd.ProcessState.ExitCode(), errOut.String()
}

// The files $FACTLINE_SECRET_FILES names hold secrets as much as those
// the flags name, and are held to the same rule (secrets.FileExposure):
// one open to others is read with one warning naming the variable, the
// path, its mode and the fix; one any user may change is refused, exit
// 2, before anything connects. Before, they were read in silence
// whatever their mode.
func TestSecretFilesFromTheEnvironmentAreHeldToTheRule(t *testing.T) {
	t.Parallel()
	url := fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))
	tail := []string{"tail", "--no-follow", "--nats", url}
	warnLine := regexp.MustCompile(`(?m)^.*level=WARN.*secret file.*$`)
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("a-model-key-0123456789\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	closed, open, other := write("closed.key", 0o600), write("open.key", 0o644), write("open2.key", 0o640)

	code, errOut := factlineEnv(t, []string{"FACTLINE_SECRET_FILES=" + closed + "," + open + "," + other}, tail...)
	lines := warnLine.FindAllString(errOut, -1)
	if code != 1 || len(lines) != 2 {
		t.Fatalf("two files open to others of three: exit %d, %d warnings, want 1 (the connect fails) and 2:\n%s", code, len(lines), errOut)
	}
	for i, c := range []struct{ path, mode string }{{open, "0644"}, {other, "0640"}} {
		for _, want := range []string{"variable=FACTLINE_SECRET_FILES", "path=" + c.path, "mode=" + c.mode, "other users may read it", "chmod 600 " + c.path} {
			if !strings.Contains(lines[i], want) {
				t.Errorf("%s: the warning lacks %q: %s", c.path, want, lines[i])
			}
		}
	}

	writable := write("writable.key", 0o666)
	code, errOut = factlineEnv(t, []string{"FACTLINE_SECRET_FILES=" + closed + "," + writable}, tail...)
	if code != 2 || strings.Contains(errOut, "connect") {
		t.Errorf("a file any user may change: exit %d, want 2 before any connect:\n%s", code, errOut)
	}
	for _, want := range []string{"FACTLINE_SECRET_FILES", writable, "mode 0666", "any user may change it", "chmod 600 " + writable} {
		if !strings.Contains(errOut, want) {
			t.Errorf("a file any user may change: the refusal lacks %q:\n%s", want, errOut)
		}
	}
}

// A warning that a credential is open to others is a security finding,
// printed whatever the log level: --log-level error (or
// $FACTLINE_LOG_LEVEL=error) still shows it, for a file a flag names and
// for one $FACTLINE_SECRET_FILES names. Before, --log-level error hid it.
func TestSecretFileWarningsIgnoreTheLogLevel(t *testing.T) {
	t.Parallel()
	url := fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))
	warnLine := regexp.MustCompile(`(?m)^.*level=WARN.*UNPROTECTED secret file.*$`)
	open := secretFiles(t, t.TempDir(), 0o644)
	key := filepath.Join(t.TempDir(), "model.key")
	if err := os.WriteFile(key, []byte("a-model-key-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"tail", "--no-follow", "--nats", url, "--log-level", "error"}, open["--nkey"]...)
	for _, env := range [][]string{{"FACTLINE_SECRET_FILES=" + key}, {"FACTLINE_SECRET_FILES=" + key, "FACTLINE_LOG_LEVEL=error"}} {
		code, errOut := factlineEnv(t, env, args...)
		lines := warnLine.FindAllString(errOut, -1)
		if code != 1 || len(lines) != 2 {
			t.Errorf("%v, --log-level error: exit %d, %d warnings about the open files, want 1 and 2:\n%s", env, code, len(lines), errOut)
			continue
		}
		if !strings.Contains(lines[0], "path="+key) || !strings.Contains(lines[1], "flag=--nkey") {
			t.Errorf("%v: the warnings name the wrong files:\n%s", env, strings.Join(lines, "\n"))
		}
	}
}
