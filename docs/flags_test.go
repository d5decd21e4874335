package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// A command line as the pages show it: factline, a command and what
	// follows up to a pipe, a command separator or the span's end.
	factlineCall = regexp.MustCompile("factline ([a-z]+)((?: [^`|;&#]*)?)")
	longFlag     = regexp.MustCompile(`(?:^|\s)(--[a-z0-9][a-z0-9-]*)`)
	helpFlag     = regexp.MustCompile(`(?m)^\s+(?:-\w, )?(--[a-z0-9-]+)`)
)

// Every `--flag` a page shows on a factline command line is a flag of that
// command: a reader who copies the line gets no "unknown flag". The lines
// are those of code blocks and of inline code spans, in README.md and
// docs/.
func TestEveryFlagThePagesShowIsTheCommands(t *testing.T) {
	path := factlineOnPath(t)
	bin := filepath.Join(strings.SplitN(path, string(os.PathListSeparator), 2)[0], "factline")
	flags := map[string]map[string]bool{}
	flagsOf := func(cmd string) map[string]bool {
		if f, ok := flags[cmd]; ok {
			return f
		}
		out, err := exec.Command(bin, append(strings.Fields(cmd), "--help")...).Output()
		if err != nil {
			flags[cmd] = nil // no such command: not a command line (prose)
			return nil
		}
		f := map[string]bool{"--help": true}
		for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
			f[m[1]] = true
		}
		flags[cmd] = f
		return f
	}
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join("..", "README.md"))
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			for _, m := range factlineCall.FindAllStringSubmatch(line, -1) {
				cmd, rest := m[1], m[2]
				if cmd == "suite" {
					// suite pause|resume|drain|cancel share their flags.
					cmd = "suite pause"
				}
				known := flagsOf(cmd)
				if known == nil {
					continue
				}
				for _, f := range longFlag.FindAllStringSubmatch(rest, -1) {
					checked++
					if !known[f[1]] {
						t.Errorf("%s:%d: factline %s has no flag %s: %s", page, n+1, cmd, f[1], strings.TrimSpace(line))
					}
				}
			}
		}
	}
	t.Logf("%d flags on factline command lines checked", checked)
	if checked < 100 {
		t.Fatalf("checked only %d flags; the command pattern no longer matches the pages", checked)
	}
}
