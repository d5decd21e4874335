package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
)

// The seed written is a valid user seed whose public key is the one
// printed, in a file nobody else can read, and an existing file is never
// overwritten.
func TestSeedMatchesPrintedKey(t *testing.T) {
	p := filepath.Join(t.TempDir(), "runner.nk")
	var out bytes.Buffer
	if err := run([]string{"-role", "runner", "-out", p}, &out); err != nil {
		t.Fatal(err)
	}
	seed, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
	if err != nil {
		t.Fatalf("seed does not parse: %v", err)
	}
	pub, _ := kp.PublicKey()
	if !strings.HasPrefix(pub, "U") || !strings.Contains(out.String(), "{nkey: "+pub+", permissions: $RUNNER}") {
		t.Fatalf("printed %q for key %s", out.String(), pub)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("seed file mode %v", st.Mode().Perm())
	}
	if err := run([]string{"-role", "runner", "-out", p}, &out); err == nil {
		t.Fatal("an existing seed file was overwritten")
	}
}
