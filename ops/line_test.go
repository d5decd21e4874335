package ops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// Every kind renders a line with its fields, checked on the golden facts
// of the events package (real encodings of every kind and variant).
func TestEveryKindHasASummary(t *testing.T) {
	files, err := filepath.Glob("../events/testdata/golden/*.msgpack")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden facts: %v", err)
	}
	seen := map[events.Kind]bool{}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := events.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		seen[f.Kind()] = true
		line := Line(7, f)
		if Summary(f) == "" || !strings.Contains(line, string(f.Kind())) || !strings.Contains(line, f.Run) {
			t.Errorf("%s renders %q", path, line)
		}
	}
	for _, k := range events.Kinds() {
		if !seen[k] {
			t.Errorf("no golden fact of kind %s to render", k)
		}
	}
}

// A reply the response cache served says so, and where it came from; a
// reply of the model does not.
func TestACachedReplySaysSo(t *testing.T) {
	body := events.ModelReplied{Turn: 2, Provider: "openai", Usage: &events.Usage{InputTokens: 9, OutputTokens: 1, Cost: new(uint64)}}
	f, err := events.NewFact(events.Meta{Suite: "s", Run: "r", TaskGeneration: 1, Position: 3,
		Producer: events.Producer{Service: events.OwnerRunner, Instance: "r1"}}, body)
	if err != nil {
		t.Fatal(err)
	}
	if s := Summary(f); strings.Contains(s, "cached") {
		t.Fatalf("a model's reply reads as cached: %q", s)
	}
	body.Cached = &events.CachedReply{Entry: events.DigestOf([]byte("e")), Suite: "s0", Run: "r0", Turn: 2}
	f.Body = body
	if s := Summary(f); !strings.Contains(s, " cached from=s0/r0/t2") {
		t.Fatalf("a cached reply renders %q", s)
	}
}

// A reply that waited for a fleet-wide model slot says how long; one that
// did not says nothing of it.
func TestModelRepliedLineShowsTheSlotWait(t *testing.T) {
	for _, c := range []struct {
		name, want string
		absent     bool
	}{{"model_replied_queued", "waited=4.2s", false}, {"model_replied", "waited=", true}} {
		data, err := os.ReadFile(filepath.Join("../events/testdata/golden", c.name+".msgpack"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := events.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if got := Summary(f); strings.Contains(got, c.want) == c.absent {
			t.Errorf("%s renders %q; want %q absent=%v", c.name, got, c.want, c.absent)
		}
	}
}

// A suite's control reads on tail's line as what was done, by whom and why.
func TestASuiteControlSaysWhatWhoAndWhy(t *testing.T) {
	f, err := events.NewFact(events.Meta{Suite: "s", Run: events.SuiteScope, Position: 2,
		Producer: events.Producer{Service: events.OwnerSubmitter, Instance: "cli"}},
		events.SuiteControlled{ID: "c1", Action: events.SuiteCancel, From: "ops@host", Reason: "wrong model"})
	if err != nil {
		t.Fatal(err)
	}
	line := Line(9, f)
	for _, want := range []string{"suite.controlled", "cancel by ops@host", `"wrong model"`, "c1"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
}
