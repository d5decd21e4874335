// Package docs tests the documentation against the code: the pages'
// commands run as written, and their example tool calls pass the tools'
// own schemas.
package docs

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
)

// fence is one fenced code block of a markdown page. Its info string is
// a language and words: `file=PATH` marks a file a test writes (PATH
// relative to the page's working directory), `run` marks commands a test
// runs, `tool-calls` marks example tool calls, one JSON object a line.
type fence struct {
	page  string
	line  int // of the opening fence, 1-based
	lang  string
	file  string
	words map[string]bool
	body  string
}

// has reports whether the fence's info string holds word.
func (f fence) has(word string) bool { return f.words[word] }

// where names the fence for messages.
func (f fence) where() string { return f.page + ":" + strconv.Itoa(f.line) }

// fences reads the fenced code blocks of a page that open at the start of
// a line (blocks inside list items are shown, never run or written).
func fences(t *testing.T, page string) []fence {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var out []fence
	var cur *fence
	var body bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			info := strings.Fields(strings.TrimPrefix(line, "```"))
			cur = &fence{page: page, line: n, words: map[string]bool{}}
			for i, w := range info {
				switch {
				case i == 0 && !strings.Contains(w, "="):
					cur.lang = w
				case strings.HasPrefix(w, "file="):
					cur.file = strings.TrimPrefix(w, "file=")
				default:
					cur.words[w] = true
				}
			}
			body.Reset()
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.body = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s: the code block opened at line %d never closes", page, cur.line)
	}
	return out
}
