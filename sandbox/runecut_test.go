package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The output cap never cuts inside a character: keeping the start, a
// character the cap would split is left out whole (and counted); keeping
// the end, so are the bytes of one whose start was dropped. A split one
// became U+FFFD once the output was read as text, a character the command
// never printed.
func TestOutputCapCutsOnACharacter(t *testing.T) {
	var sb *Sandbox
	dir := t.TempDir()
	for _, c := range []struct {
		script, kept, mark string
		last               bool
	}{
		{`head -c 99 /dev/zero | tr '\0' a; printf 'éééééééééé'`, strings.Repeat("a", 99), "\n[output cut: 20 more bytes not shown]", false},
		{`printf 'éééééééééé'; head -c 99 /dev/zero | tr '\0' a`, strings.Repeat("a", 99), "[output cut: 20 earlier bytes not shown]\n", true},
	} {
		res, err := sb.Run(context.Background(), Command{Script: c.script, Dir: dir, Timeout: time.Minute, OutputCap: 100, KeepLast: c.last})
		if err != nil {
			t.Fatal(err)
		}
		want := c.kept + c.mark
		if c.last {
			want = c.mark + c.kept
		}
		if res.Output != want || !utf8.ValidString(res.Output) {
			t.Errorf("keep last %v: %q, want %q", c.last, res.Output, want)
		}
	}
}
