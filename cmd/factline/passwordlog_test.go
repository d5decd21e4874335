package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/secrets"
)

// A NATS password given by --password or --password-file is a secret of
// the process like one the environment names: a log line that quotes it
// (a server URL a user wrote it into, an error that repeats it) shows the
// marker instead. Only $FACTLINE_NATS_PASSWORD was redacted, since the
// redactor was made from the environment alone.
func TestAPasswordGivenByFlagOrFileIsRedactedFromTheLog(t *testing.T) {
	t.Setenv(PasswordEnv, "")
	const flagPW, filePW = "flag-pw-7f3a9c1d", "file-pw-e81b2d44"
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte(filePW+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*credentials{{user: "runner", password: flagPW}, {user: "runner", passwordFile: file}} {
		if _, err := c.options(); err != nil {
			t.Fatalf("%s: %v", c.pwFrom, err)
		}
	}
	var buf bytes.Buffer
	log := slog.New(secrets.NewHandler(slog.NewTextHandler(&buf, nil), logSecrets))
	log.Warn("connect failed", "url", "nats://runner:"+flagPW+"@n1:4222", "err", "refused "+filePW)
	if strings.Contains(buf.String(), flagPW) || strings.Contains(buf.String(), filePW) {
		t.Errorf("a log line shows a password the command was given: %s", buf.String())
	}
	if strings.Count(buf.String(), "[redacted:") != 2 {
		t.Errorf("a log line quoting two passwords shows %d redaction markers, want 2: %s", strings.Count(buf.String(), "[redacted:"), buf.String())
	}
}
