package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A password file holds the password alone, on one line (docs/cli.md):
// a second line is no part of any password the server knows, and sending
// the whole file made only "Authorization Violation" of it. A file of
// blanks is as empty as an empty one. A trailing newline, in the file or
// in $FACTLINE_NATS_PASSWORD (a Kubernetes Secret made --from-file), is
// no part of the password.
func TestAPasswordFileHoldsOneLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	twoLines := write("two-lines", "s3cretpw\n# the runner's password\n")
	blank := write("blank", " \t\n")
	crlf := write("crlf", "s3cretpw\r\n")
	t.Setenv(PasswordEnv, "")

	_, err := (&credentials{user: "runner", passwordFile: twoLines}).options()
	if !errors.As(err, new(fileError)) || !strings.Contains(err.Error(), twoLines) || !strings.Contains(err.Error(), "one line") ||
		strings.Contains(err.Error(), "s3cretpw") {
		t.Errorf("a password file of two lines: %v, want a file error naming it and saying one line", err)
	}
	_, err = (&credentials{user: "runner", passwordFile: blank}).options()
	// Not "empty": a reader looking at a file of a few bytes would be told
	// it has none (docs/cli.md says "of blanks only").
	if !errors.As(err, new(fileError)) || !strings.Contains(err.Error(), "--password-file "+blank+" holds only blanks") {
		t.Errorf("a password file of blanks: %v, want a file error naming it and saying it holds only blanks", err)
	}
	if pw, err := (&credentials{user: "runner", passwordFile: crlf}).readPassword(); err != nil || pw != "s3cretpw" {
		t.Errorf("a password file ending in CRLF gives %q, %v", pw, err)
	}
	t.Setenv(PasswordEnv, "s3cretpw\n")
	if pw, err := (&credentials{user: "runner"}).readPassword(); err != nil || pw != "s3cretpw" {
		t.Errorf("$%s ending in a newline gives %q, %v", PasswordEnv, pw, err)
	}
}

// A password with a space or tab before or after it is refused by the
// server like any wrong one; the refusal says where the blank is, so
// that the operator does not hunt for a wrong password that is right.
func TestAPasswordPaddedWithBlanksIsNamedWhenRefused(t *testing.T) {
	dir := t.TempDir()
	conf := "accounts {\n  T: {\n    jetstream: enabled\n    users: [ {user: admin, password: $T_PAD_PASSWORD} ]\n  }\n}\n"
	const secret = "padded-pw-2c81e4"
	t.Setenv("T_PAD_PASSWORD", `"`+secret+`"`)
	t.Setenv(PasswordEnv, "")
	srv := serveConfig(t, dir, conf)

	padded := filepath.Join(dir, "admin-pw")
	if err := os.WriteFile(padded, []byte(secret+"  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "setup", "--nats", srv.ClientURL(), "--user", "admin", "--password-file", padded)
	if code != 1 || !strings.Contains(errOut, "user admin") || !strings.Contains(errOut, "space or tab") || !strings.Contains(errOut, padded) {
		t.Errorf("a password file with blanks after the password: exit %d, stderr %q", code, errOut)
	}
	if strings.Contains(out+errOut, secret) {
		t.Errorf("the password was echoed: %q", out+errOut)
	}

	t.Setenv(PasswordEnv, "\t"+secret)
	code, out, errOut = runCLI(t, "setup", "--nats", srv.ClientURL(), "--user", "admin")
	if code != 1 || !strings.Contains(errOut, "space or tab") || !strings.Contains(errOut, "$"+PasswordEnv) || strings.Contains(out+errOut, secret) {
		t.Errorf("$%s with a tab before the password: exit %d, stderr %q", PasswordEnv, code, errOut)
	}

	t.Setenv(PasswordEnv, secret+"\n")
	if code, out, errOut := runCLI(t, "setup", "--nats", srv.ClientURL(), "--user", "admin"); code != 0 || !strings.Contains(out, "set up") {
		t.Errorf("$%s with a trailing newline: exit %d, %q %q", PasswordEnv, code, out, errOut)
	}
}
