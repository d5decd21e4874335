package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/factline/factline/models"
)

// FuzzParse checks that Parse never panics, that every failure is a
// *ParseError naming the file, and that every script it accepts answers each
// of its turns consistently. Seeds are in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte("turns:\n  - text: hi\n"))
	f.Add([]byte("model: m\nturns:\n  - calls: [{name: a, args: {x: [1, 2.5, null]}}, {name: b, args_raw: '{'}]\n    usage: {input_tokens: 1, output_tokens: 2, cost: 3}\n"))
	f.Add([]byte("turns:\n  - {error: rate_limited, retry_after: 1s, reserve: 4}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("fuzz.yaml", data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error %T %q is not a *ParseError naming the file", err, err)
			}
			return
		}
		if m.Len() < 1 || m.Name() == "" {
			t.Fatalf("accepted a script with %d turns and name %q", m.Len(), m.Name())
		}
		if _, err := m.Render(models.Request{}); err != nil {
			t.Fatalf("Render: %v", err)
		}
		for i, tt := range m.turns {
			n := i + 1
			if got := m.Reserve(models.Request{Turn: n}); got != tt.reserve {
				t.Fatalf("turn %d: Reserve %d, want %d", n, got, tt.reserve)
			}
			if tt.delay > 0 {
				continue // fuzzed delays may be long; delays are tested elsewhere
			}
			r, err := m.Complete(context.Background(), models.Request{Turn: n})
			if tt.errKind != "" {
				if models.KindOf(err) != tt.errKind {
					t.Fatalf("turn %d: got %v, want kind %s", n, err, tt.errKind)
				}
				continue
			}
			if err != nil {
				t.Fatalf("turn %d: %v", n, err)
			}
			if !contains(finishes, r.Finish) {
				t.Fatalf("turn %d: finish %q", n, r.Finish)
			}
			ids := map[string]bool{}
			for _, c := range r.Calls {
				if c.Name == "" || c.ID == "" || ids[c.ID] {
					t.Fatalf("turn %d: bad call %+v", n, c)
				}
				ids[c.ID] = true
			}
		}
		if _, err := m.Complete(context.Background(), models.Request{Turn: m.Len() + 1}); models.KindOf(err) != models.ErrExhausted {
			t.Fatalf("beyond the script: %v, want exhausted", err)
		}
	})
}

// TestArgsMappingIsJSON checks that args given as a nested mapping become a
// valid, compact JSON object with sorted keys.
func TestArgsMappingIsJSON(t *testing.T) {
	m := mustParse(t, "turns:\n  - calls: [{name: a, args: {k: {n: [1, two, 3.5, true, ~]}, s: \"x\\\"y\"}}]\n")
	var v map[string]any
	if err := json.Unmarshal([]byte(m.turns[0].calls[0].Args), &v); err != nil {
		t.Fatalf("args %q are not a JSON object: %v", m.turns[0].calls[0].Args, err)
	}
	if want := `{"k":{"n":[1,"two",3.5,true,null]},"s":"x\"y"}`; m.turns[0].calls[0].Args != want {
		t.Errorf("args = %s, want %s", m.turns[0].calls[0].Args, want)
	}
}
