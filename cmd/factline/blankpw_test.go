package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A password file of blanks is not empty: the message says what it holds,
// as docs/cli.md does ("of blanks only"), or a reader looking at a file of
// a few bytes is told it has none.
func TestABlankPasswordFileIsCalledBlank(t *testing.T) {
	blank := filepath.Join(t.TempDir(), "blank")
	if err := os.WriteFile(blank, []byte("   \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := credentials{user: "runner", passwordFile: blank}
	_, err := c.options()
	if err == nil || !strings.Contains(err.Error(), "--password-file "+blank+" holds only blanks") {
		t.Fatalf("a password file of blanks: %v", err)
	}
}
