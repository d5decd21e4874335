package docs

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// headingSlug turns a heading into the anchor GitHub gives it: lower case,
// punctuation other than '-' and '_' dropped, spaces as dashes.
func headingSlug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || r > 0x7f:
			b.WriteRune(r)
		}
	}
	return b.String()
}

var headingLine = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// anchors returns the anchors of a markdown page's headings, outside
// fenced blocks, a repeated heading's numbered the way GitHub numbers them.
func anchors(t *testing.T, page string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		m := headingLine.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		s := headingSlug(m[1])
		if n, ok := seen[s]; ok {
			seen[s] = n + 1
			out[s+"-"+strconv.Itoa(n+1)] = true
			continue
		}
		seen[s] = 0
		out[s] = true
	}
	return out
}

var mdLink = regexp.MustCompile(`\]\(([^)\s#]*\.md)?#([^)\s]+)\)`)

// Every link to a section (`page.md#anchor`, or `#anchor` on the same
// page) in README.md and docs/ names a heading that exists: a renamed
// heading otherwise leaves readers at the top of a long page.
func TestEverySectionLinkNamesAHeading(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join("..", "README.md"))
	cache := map[string]map[string]bool{}
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := page
				if m[1] != "" {
					target = filepath.Join(filepath.Dir(page), filepath.FromSlash(m[1]))
				}
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s:%d: link to %s#%s: %v", page, n+1, m[1], m[2], err)
					continue
				}
				if cache[target] == nil {
					cache[target] = anchors(t, target)
				}
				checked++
				if !cache[target][m[2]] {
					t.Errorf("%s:%d: %s#%s names no heading of %s", page, n+1, m[1], m[2], target)
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d section links; the link pattern no longer matches the pages", checked)
	}
}
