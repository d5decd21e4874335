package main

import (
	"strings"
	"testing"
)

// shellWords splits an example's command line as a shell would, quotes
// taken away, up to a redirection or a pipe, leaving out the environment
// assignments before factline.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	in, quote, started := false, rune(0), false
	flush := func() {
		if in {
			words = append(words, cur.String())
		}
		cur.Reset()
		in = false
	}
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			flush()
		case r == '>' || r == '|':
			flush()
			return words
		default:
			cur.WriteRune(r)
			in = true
		}
		if !started && len(words) > 0 {
			if words[0] == "factline" {
				started = true
			} else {
				words = words[:0] // an assignment such as OTEL_…=… before the command
			}
		}
	}
	flush()
	return words
}

// Every example a command's help shows is a command line its flags accept:
// a reader who copies one gets no "unknown flag". (Lines of other
// programs, such as decode's nats commands, are not factline's to check.)
func TestEveryHelpExampleParses(t *testing.T) {
	root := newRoot()
	checked := 0
	for path, text := range commandTexts() {
		for _, ex := range text.Examples {
			words := shellWords(ex)
			if len(words) < 2 || words[0] != "factline" {
				continue // another program's line (decode's nats commands)
			}
			c, rest, err := root.Find(words[1:])
			// suite's examples run its subcommands.
			if err != nil || (c.CommandPath() != "factline "+path && !strings.HasPrefix(c.CommandPath(), "factline "+path+" ")) {
				t.Errorf("%s: example %q runs %q (%v)", path, ex, c.CommandPath(), err)
				continue
			}
			if err := c.ParseFlags(rest); err != nil {
				t.Errorf("%s: example %q: %v", path, ex, err)
			}
			checked++
		}
	}
	if checked < 30 {
		t.Fatalf("checked %d examples; commands.yaml has more", checked)
	}
}
