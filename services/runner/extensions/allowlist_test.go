package extensions_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner/extensions"
)

const hexDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

func TestParseAllowlistDefaults(t *testing.T) {
	l, err := extensions.Parse("ext.yaml", []byte(`extensions:
  - name: notes
    command: /opt/mcp/notes
    args: [--root, .]
    digest: `+hexDigest+`
    env: {NOTES_MODE: test}
    tools:
      - {name: search, effect: read}
      - {name: save, effect: write, timeout: 5s, output_cap: 100}
      - {name: publish, effect: external}
      - {name: wipe, effect: irreversible, approval: always}
      - {name: peek, effect: read, approval: always}
`))
	if err != nil {
		t.Fatal(err)
	}
	e, ok := l.Lookup("notes")
	if !ok || e.Command != "/opt/mcp/notes" || len(e.Args) != 2 || e.StartTimeout.Std() != extensions.DefaultStartTimeout {
		t.Fatalf("entry %+v", e)
	}
	want := map[string]struct {
		effect   events.EffectClass
		approval string
		timeout  time.Duration
		cap      int
	}{
		"search":  {events.EffectRead, "never", extensions.DefaultTimeout, extensions.DefaultOutputCap},
		"save":    {events.EffectWrite, "never", 5 * time.Second, 100},
		"publish": {events.EffectExternal, "always", extensions.DefaultTimeout, extensions.DefaultOutputCap},
		"wipe":    {events.EffectIrreversible, "always", extensions.DefaultTimeout, extensions.DefaultOutputCap},
		"peek":    {events.EffectRead, "always", extensions.DefaultTimeout, extensions.DefaultOutputCap},
	}
	for _, c := range e.Tools {
		w := want[c.Name]
		if c.Effect != w.effect || c.Approval != w.approval || c.Timeout.Std() != w.timeout || c.OutputCap != w.cap {
			t.Errorf("%s: %+v, want %+v", c.Name, c, w)
		}
	}
	if _, ok := l.Lookup("other"); ok {
		t.Error("an entry that is not there was found")
	}
}

// Every mistake is refused with an error naming the file, the line and the
// field.
func TestParseAllowlistErrors(t *testing.T) {
	entry := func(body string) string {
		return "extensions:\n  - name: notes\n    command: /opt/notes\n    digest: " + hexDigest + "\n" + body
	}
	tools := "    tools:\n      - {name: search, effect: read}\n"
	for _, c := range []struct {
		name, yaml, field, msg string
		line                   int
	}{
		{"unknown field", entry(tools + "    sha: x\n"), "", "unknown field", 7},
		{"relative command", "extensions:\n  - name: notes\n    command: bin/notes\n    digest: " + hexDigest + "\n" + tools, "extensions[0].command", "absolute", 3},
		{"missing digest", "extensions:\n  - name: notes\n    command: /opt/notes\n" + tools, "extensions[0].digest", "required", 2},
		{"bad digest", "extensions:\n  - name: notes\n    command: /opt/notes\n    digest: md5:abc\n" + tools, "extensions[0].digest", "sha256", 4},
		{"no tools", entry(""), "extensions[0].tools", "list the tools", 2},
		{"bad effect", entry("    tools:\n      - {name: search, effect: reads}\n"), "extensions[0].tools[0].effect", "unknown effect class", 6},
		{"external without approval", entry("    tools:\n      - name: search\n        effect: read\n      - name: pay\n        effect: external\n        approval: never\n"), "extensions[0].tools[1].approval", "cannot be never", 10},
		{"bad approval", entry("    tools:\n      - {name: search, effect: read, approval: sometimes}\n"), "extensions[0].tools[0].approval", "unknown approval", 6},
		{"duplicate tool", entry("    tools:\n      - {name: search, effect: read}\n      - {name: search, effect: write}\n"), "extensions[0].tools[1].name", "twice", 7},
		{"bad tool name", entry("    tools:\n      - {name: 'a b', effect: read}\n"), "extensions[0].tools[0].name", "A-Z", 6},
		{"duplicate extension", entry(tools) + "  - name: notes\n    command: /opt/x\n    digest: " + hexDigest + "\n" + tools, "extensions[1].name", "twice", 7},
		{"bad extension name", "extensions:\n  - name: 'no tes'\n    command: /opt/notes\n    digest: " + hexDigest + "\n" + tools, "extensions[0].name", "character ' '", 2},
		{"separator in name", "extensions:\n  - name: no__tes\n    command: /opt/notes\n    digest: " + hexDigest + "\n" + tools, "extensions[0].name", "separates", 2},
		{"long timeout", entry("    tools:\n      - {name: search, effect: read, timeout: 1h}\n"), "extensions[0].tools[0].timeout", "limit", 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := extensions.Parse("ext.yaml", []byte(c.yaml))
			var e *extensions.Error
			if !errors.As(err, &e) || !errors.Is(err, extensions.ErrInvalid) {
				t.Fatalf("got %v, want an *extensions.Error", err)
			}
			if e.File != "ext.yaml" || e.Field != c.field || !strings.Contains(e.Msg, c.msg) {
				t.Fatalf("got %q (field %q), want field %q and %q", err, e.Field, c.field, c.msg)
			}
			if c.line > 0 && e.Line != c.line {
				t.Fatalf("got line %d, want %d: %v", e.Line, c.line, err)
			}
			if !strings.HasPrefix(err.Error(), "ext.yaml") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			// The field is named once: "name: name: …" named it twice.
			if key := c.field[strings.LastIndexAny(c.field, ".]")+1:]; key != "" && strings.HasPrefix(e.Msg, key+": ") {
				t.Fatalf("the message names the field %s again: %v", c.field, err)
			}
		})
	}
}
