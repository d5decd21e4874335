package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
)

// A --creds file is read at connect by the NATS client; one that holds
// no user seed, or is a directory, failed there with exit 1 and "error
// signing nonce", where docs/cli.md promises a malformed --creds file
// exit 2 with one message naming it, as for --nkey and --password-file.
func TestAMalformedCredsFileIsAFileError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.creds")
	if err := os.WriteFile(garbage, []byte("not a creds file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	user, _ := nkeys.CreateUser()
	seed, _ := user.Seed()
	jwtOnly := filepath.Join(dir, "jwt-only.creds")
	if err := os.WriteFile(jwtOnly, []byte("-----BEGIN NATS USER JWT-----\neyJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln\n------END NATS USER JWT------\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	seedOnly := filepath.Join(dir, "seed-only.creds")
	if err := os.WriteFile(seedOnly, []byte("-----BEGIN USER NKEY SEED-----\n"+string(seed)+"\n------END USER NKEY SEED------\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.creds")
	creds := "-----BEGIN NATS USER JWT-----\neyJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln\n------END NATS USER JWT------\n\n" +
		"-----BEGIN USER NKEY SEED-----\n" + string(seed) + "\n------END USER NKEY SEED------\n"
	if err := os.WriteFile(good, []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []string{garbage, jwtOnly, seedOnly, dir} {
		_, err := (&credentials{creds: bad}).options()
		if !errors.As(err, new(fileError)) || !strings.Contains(err.Error(), bad) {
			t.Errorf("--creds %s: %v, want a file error naming it", filepath.Base(bad), err)
		}
		if err != nil && strings.Contains(err.Error(), string(seed)) {
			t.Errorf("--creds %s: the error shows the seed: %v", filepath.Base(bad), err)
		}
	}
	if _, err := (&credentials{creds: good}).options(); err != nil {
		t.Errorf("--creds of a JWT and a user seed: %v", err)
	}

	code, out, errOut := runCLI(t, "tail", "--nats", "nats://127.0.0.1:1", "--creds", garbage, "--no-follow")
	if code != 2 || out != "" || !strings.Contains(errOut, "garbage.creds") || strings.Contains(errOut, "--help") {
		t.Errorf("tail --creds of a file holding no creds: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
