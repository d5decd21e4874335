package scripted

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/factline/factline/models"
)

// renderWhole is Render as it was before messages were kept: the whole
// request canonicalised at once. The incremental Render must match it
// byte for byte.
func renderWhole(req models.Request) ([]byte, error) {
	r := renderRequest{Messages: req.Messages, Tools: req.Tools, Settings: req.Settings}
	if r.Messages == nil {
		r.Messages = []models.Message{}
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return canonicalJSON(raw)
}

// growingRequest is turn n's request of a run: a system and a user message,
// then an assistant call and its tool answer per turn.
func growingRequest(n int) models.Request {
	msgs := []models.Message{{Role: models.RoleSystem, Content: "be <brief> & exact \u2028"}, {Role: models.RoleUser, Content: "fix it"}}
	for i := 1; i < n; i++ {
		id := fmt.Sprintf("c%d", i)
		msgs = append(msgs,
			models.Message{Role: models.RoleAssistant, Content: "looking", ToolCalls: []models.ToolCall{{ID: id, Name: "read_file", Args: `{"path": "a.txt"}`}}},
			models.Message{Role: models.RoleTool, ToolCallID: id, Content: fmt.Sprintf("turn %d: hello \"world\"", i)})
	}
	temp := 0.5
	return models.Request{Turn: n, Messages: msgs, Settings: models.Settings{Model: "m", Temperature: &temp},
		Tools: []models.ToolSpec{{Name: "read_file", Description: "read", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}}
}

// Whatever sequence of requests one model renders (a run growing, a
// history cut by a context policy, a message edited in the middle, tools
// and settings changing, a caller changing a rendered request afterwards),
// each render is the bytes of canonicalising the whole request.
func TestIncrementalRenderIsTheWholeRender(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	m := mustParse(t, "turns: [{}]\n")
	check := func(step int, req models.Request) {
		t.Helper()
		got, err := m.Render(req)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		want, err := renderWhole(req)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("step %d: incremental render\n%s\nwhole render\n%s", step, got, want)
		}
	}
	for step := range 300 {
		req := growingRequest(1 + r.IntN(12))
		switch r.IntN(6) {
		case 0: // a context policy dropped older messages
			k := r.IntN(len(req.Messages))
			req.Messages = append(req.Messages[:1:1], req.Messages[k+1:]...)
		case 1: // a message in the middle differs
			i := r.IntN(len(req.Messages))
			req.Messages[i].Content += " (edited)"
		case 2: // a call's arguments differ
			for i := range req.Messages {
				if len(req.Messages[i].ToolCalls) > 0 {
					req.Messages[i].ToolCalls = []models.ToolCall{{ID: "x", Name: "read_file", Args: `{"path":"b"}`}}
					break
				}
			}
		case 3:
			req.Tools, req.Settings = nil, models.Settings{}
		case 4:
			req.Messages = nil
		}
		check(step, req)
		// The caller changes what it passed; the next render must not
		// reuse what the model kept of it.
		for i := range req.Messages {
			for j := range req.Messages[i].ToolCalls {
				req.Messages[i].ToolCalls[j].Args = `{"changed":true}`
			}
		}
		check(step, req)
	}
}

// A turn's render encodes only the messages that are new since the last
// one: rendering turn 60 after turn 59 takes a small part of the
// allocations of rendering it from nothing. Before messages were kept
// both allocated the same.
func TestRenderEncodesOnlyNewMessages(t *testing.T) {
	long, before := growingRequest(60), growingRequest(59)
	fresh := testing.AllocsPerRun(20, func() {
		if _, err := mustParse(t, "turns: [{}]\n").Render(long); err != nil {
			t.Fatal(err)
		}
	})
	m := mustParse(t, "turns: [{}]\n")
	next := testing.AllocsPerRun(20, func() {
		if _, err := m.Render(before); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Render(long); err != nil {
			t.Fatal(err)
		}
	}) / 2 // two renders a run, each with two new messages
	if next*5 > fresh {
		t.Errorf("a turn's render allocates %.0f times after the turn before, %.0f from nothing: it re-encodes the history", next, fresh)
	}
	t.Logf("allocations of turn 60's render: %.0f from nothing, %.0f after turn 59", fresh, next)
}

// BenchmarkRenderTurn renders turn n's request after turn n-1's on one
// model, as a runner does once a turn.
func BenchmarkRenderTurn(b *testing.B) {
	for _, n := range []int{10, 45} {
		b.Run(fmt.Sprintf("turn=%d", n), func(b *testing.B) {
			m, err := Parse("t.yaml", []byte("turns: [{}]\n"))
			if err != nil {
				b.Fatal(err)
			}
			prev, req := growingRequest(n-1), growingRequest(n)
			for b.Loop() {
				if _, err := m.Render(prev); err != nil {
					b.Fatal(err)
				}
				if _, err := m.Render(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
