package runner

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// The runs a stopping runner hands back are said in one warning, sorted,
// every one or the first listed then how many more, and once: a second
// say, with none handed back since, logs nothing.
func TestHandedBackRunsAreSaidInOneLine(t *testing.T) {
	for _, c := range []struct {
		listed int
		want   string
	}{
		{0, `count=3 runs="s/a, s/b, s/c"`},
		{2, `count=3 runs="s/a, s/b and 1 more"`},
		{3, `count=3 runs="s/a, s/b, s/c"`},
	} {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, nil))
		h := handedBack{listed: c.listed}
		for _, r := range []string{"c", "a", "b"} {
			h.add("s", r)
		}
		h.say(log)
		h.say(log)
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], c.want) {
			t.Errorf("listed %d: logged %q, want one warning with %s", c.listed, buf.String(), c.want)
		}
	}
}
