package version

import (
	"encoding/json"
	"runtime/debug"
	"testing"
)

func TestABuildFromACheckoutNamesItsRevisionAndWhetherItWasDirty(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/factline/factline", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-12-01T00:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	b := fromInfo(info)
	if b.Revision != "abc123" || !b.Modified || b.Time != "2026-12-01T00:00:00Z" || b.Module != "github.com/factline/factline" {
		t.Fatalf("fromInfo = %+v", b)
	}
	if got, want := b.String(), "factline (devel) abc123-dirty go1.26.0"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func TestABuildWithoutVCSStampsSaysOnlyItsVersion(t *testing.T) {
	b := fromInfo(&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "m"}})
	if b.Version != "(devel)" || b.Revision != "" || b.Modified {
		t.Fatalf("fromInfo = %+v", b)
	}
	if got := b.String(); got != "factline (devel) go1.26.0" {
		t.Fatalf("String() = %q", got)
	}
}

func TestCurrentReadsTheRunningBinary(t *testing.T) {
	if b := Current(); b.Go == "" || b.Version == "" {
		t.Fatalf("Current() = %+v, want the toolchain and a version", b)
	}
}

// The harness component names the build and the behaviour: a change of
// either, even of one behaviour part, makes another component.
func TestHarnessComponentFollowsTheBuildAndTheBehaviour(t *testing.T) {
	b := Build{Module: "m", Version: "(devel)", Revision: "abc", Go: "go1.26.0"}
	parts := map[string]json.RawMessage{"tools": json.RawMessage(`[{"name":"a"}]`), "context": json.RawMessage(`{"mode":"full"}`)}
	base, err := HarnessOf(b, parts)
	if err != nil {
		t.Fatal(err)
	}
	dirty := b
	dirty.Modified = true
	other := map[string]json.RawMessage{"tools": json.RawMessage(`[{"name":"b"}]`), "context": parts["context"]}
	for name, got := range map[string]func() (string, error){
		"dirty tree": func() (string, error) { return HarnessOf(dirty, parts) },
		"other revision": func() (string, error) {
			return HarnessOf(Build{Module: "m", Version: "(devel)", Revision: "abd", Go: "go1.26.0"}, parts)
		},
		"other tools":  func() (string, error) { return HarnessOf(b, other) },
		"no behaviour": func() (string, error) { return HarnessOf(b, nil) },
	} {
		c, err := got()
		if err != nil || c == base {
			t.Errorf("%s: %q (%v), the same as %q", name, c, err, base)
		}
	}
	if again, _ := HarnessOf(b, map[string]json.RawMessage{"context": parts["context"], "tools": parts["tools"]}); again != base {
		t.Errorf("one behaviour, two components: %q and %q", again, base)
	}
}
