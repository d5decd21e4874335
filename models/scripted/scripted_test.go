package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/models"
)

func mustParse(t *testing.T, src string) *Model {
	t.Helper()
	m, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return m
}

func TestComplete(t *testing.T) {
	m, err := Load(filepath.Join("testdata", "example.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	tests := []struct {
		turn      int
		want      models.Reply
		wantKind  models.ErrorKind
		wantRetry time.Duration
	}{
		{turn: 1, want: models.Reply{
			Text: "Let me look at the files first.",
			Calls: []models.ToolCall{
				{ID: "call-1-1", Name: "list_files", Args: `{"path":".","recursive":true}`},
				{ID: "read-1", Name: "read_file", Args: `{"path":"README.md"}`},
			},
			Usage:  &models.Usage{InputTokens: 812, OutputTokens: 41, Cost: u64(3)},
			Finish: models.FinishToolCalls,
			Model:  "demo-agent",
		}},
		{turn: 2, wantKind: models.ErrRateLimited, wantRetry: 2 * time.Second},
		{turn: 3, want: models.Reply{
			Calls:  []models.ToolCall{{ID: "call-3-1", Name: "write_file", Args: `{"path": "out.txt", "content": `}},
			Finish: models.FinishToolCalls,
			Model:  "demo-agent",
		}},
		{turn: 4, want: models.Reply{Text: "The answer is 42.", Finish: models.FinishStop, Model: "demo-agent"}},
		{turn: 5, wantKind: models.ErrExhausted},
		{turn: 99, wantKind: models.ErrExhausted},
		{turn: 0, wantKind: models.ErrBadRequest},
	}
	for _, tt := range tests {
		got, err := m.Complete(context.Background(), models.Request{Turn: tt.turn})
		if tt.wantKind != "" {
			var me *models.Error
			if !errors.As(err, &me) {
				t.Fatalf("turn %d: got reply %+v, err %v; want a %s error", tt.turn, got, err, tt.wantKind)
			}
			if me.Kind != tt.wantKind || me.Provider != "scripted" || me.RetryAfter != tt.wantRetry {
				t.Errorf("turn %d: error %+v, want kind %s, provider scripted, retry after %s", tt.turn, me, tt.wantKind, tt.wantRetry)
			}
			continue
		}
		if err != nil {
			t.Fatalf("turn %d: %v", tt.turn, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("turn %d:\n got %+v\nwant %+v", tt.turn, got, tt.want)
		}
	}
}

func TestCompleteUnknownUsageStaysNil(t *testing.T) {
	m := mustParse(t, "turns:\n  - text: a\n  - text: b\n    usage: {input_tokens: 0, output_tokens: 0}\n")
	r1, err := m.Complete(context.Background(), models.Request{Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r1.Usage != nil {
		t.Errorf("turn 1: usage %+v, want nil (unknown)", *r1.Usage)
	}
	r2, err := m.Complete(context.Background(), models.Request{Turn: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Usage == nil || *r2.Usage != (models.Usage{}) {
		t.Errorf("turn 2: usage %+v, want known zero usage with unknown cost", r2.Usage)
	}
}

func TestCompleteErrorKinds(t *testing.T) {
	for _, kind := range scriptErrorKinds {
		m := mustParse(t, "turns:\n  - error: "+string(kind)+"\n")
		_, err := m.Complete(context.Background(), models.Request{Turn: 1})
		if models.KindOf(err) != kind {
			t.Errorf("error %s: got %v (kind %q)", kind, err, models.KindOf(err))
		}
	}
}

func TestCompleteRepliesAreCopies(t *testing.T) {
	m := mustParse(t, "turns:\n  - calls: [{name: a, args: {x: 1}}]\n    usage: {input_tokens: 1, output_tokens: 2, cost: 3}\n")
	r, err := m.Complete(context.Background(), models.Request{Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	r.Calls[0].Name = "changed"
	r.Usage.InputTokens = 100
	*r.Usage.Cost = 100
	again, err := m.Complete(context.Background(), models.Request{Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	if again.Calls[0].Name != "a" || again.Usage.InputTokens != 1 || *again.Usage.Cost != 3 {
		t.Errorf("a caller's change leaked into the script: %+v %+v", again.Calls, *again.Usage)
	}
}

func TestCompleteDelay(t *testing.T) {
	m := mustParse(t, "turns:\n  - text: slow\n    delay: 1h\n  - text: quick\n    delay: 1ms\n")

	t.Run("cancel during the delay", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := m.Complete(ctx, models.Request{Turn: 1})
			done <- err
		}()
		cancel()
		err := <-done // a delay that ignored ctx would hang here for an hour
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		if models.KindOf(err) != "" {
			t.Errorf("a cancellation got kind %q, want none", models.KindOf(err))
		}
	})

	t.Run("deadline during the delay is a timeout", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		_, err := m.Complete(ctx, models.Request{Turn: 1})
		if models.KindOf(err) != models.ErrTimeout || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want an ErrTimeout wrapping context.DeadlineExceeded", err)
		}
	})

	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := m.Complete(ctx, models.Request{Turn: 2}); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})

	t.Run("short delay answers", func(t *testing.T) {
		r, err := m.Complete(context.Background(), models.Request{Turn: 2})
		if err != nil || r.Text != "quick" {
			t.Errorf("got %+v, %v; want the quick reply", r, err)
		}
	})
}

func TestReserve(t *testing.T) {
	m := mustParse(t, "turns:\n  - reserve: 7\n  - {}\n  - {error: rate_limited, reserve: 9}\n")
	for turn, want := range map[int]uint64{-1: 0, 0: 0, 1: 7, 2: 0, 3: 9, 4: 0, 100: 0} {
		if got := m.Reserve(models.Request{Turn: turn}); got != want {
			t.Errorf("Reserve(turn %d) = %d, want %d", turn, got, want)
		}
	}
}

func TestRender(t *testing.T) {
	m := mustParse(t, "turns: [{}]\n")
	temp := 0.5
	seed := int64(7)
	req := models.Request{
		Turn: 3,
		Messages: []models.Message{
			{Role: models.RoleSystem, Content: "be <brief> & exact"},
			{Role: models.RoleUser, Content: "hi"},
			{Role: models.RoleAssistant, ToolCalls: []models.ToolCall{{ID: "c1", Name: "read", Args: `{"path": "a"}`}}},
			{Role: models.RoleTool, ToolCallID: "c1", Content: "text"},
		},
		Tools: []models.ToolSpec{{
			Name: "read", Description: "read a file",
			Parameters: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}`),
		}},
		Settings: models.Settings{Model: "m", Temperature: &temp, MaxOutputTokens: 100, Seed: &seed},
	}
	want := `{"messages":[{"content":"be <brief> & exact","role":"system"},{"content":"hi","role":"user"},` +
		`{"role":"assistant","tool_calls":[{"args":"{\"path\": \"a\"}","id":"c1","name":"read"}]},` +
		`{"content":"text","role":"tool","tool_call_id":"c1"}],` +
		`"settings":{"max_output_tokens":100,"model":"m","seed":7,"temperature":0.5},` +
		`"tools":[{"description":"read a file","name":"read","parameters":{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}]}`

	got, err := m.Render(req)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if string(got) != want {
		t.Errorf("Render:\n got %s\nwant %s", got, want)
	}

	t.Run("deterministic and independent of the turn and schema key order", func(t *testing.T) {
		other := req
		other.Turn = 9
		other.Tools = []models.ToolSpec{{
			Name: "read", Description: "read a file",
			Parameters: json.RawMessage(`{"required":["path"],"properties":{"path":{"type":"string"}},  "type":"object"}`),
		}}
		again, err := m.Render(other)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != want {
			t.Errorf("Render differs:\n got %s\nwant %s", again, want)
		}
	})

	t.Run("empty request", func(t *testing.T) {
		got, err := m.Render(models.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"messages":[],"settings":{"model":""}}`; string(got) != want {
			t.Errorf("Render(empty) = %s, want %s", got, want)
		}
	})

	t.Run("invalid tool parameters", func(t *testing.T) {
		bad := models.Request{Tools: []models.ToolSpec{{Name: "x", Parameters: json.RawMessage(`{"type":`)}}}
		if _, err := m.Render(bad); err == nil {
			t.Error("Render accepted invalid tool parameters")
		}
	})
}

func TestProvider(t *testing.T) {
	var mm models.Model = mustParse(t, "turns: [{}]\n")
	if mm.Provider() != "scripted" {
		t.Errorf("Provider() = %q", mm.Provider())
	}
}

func TestCompleteConcurrent(t *testing.T) {
	m := mustParse(t, "turns:\n  - text: a\n  - calls: [{name: b}]\n  - error: unavailable\n")
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := range 30 {
		wg.Add(1)
		go func(turn int) {
			defer wg.Done()
			r, err := m.Complete(context.Background(), models.Request{Turn: turn})
			switch turn {
			case 1:
				if err != nil || r.Text != "a" {
					errs <- errors.New("turn 1 did not answer a")
				}
			case 2:
				if err != nil || len(r.Calls) != 1 || r.Calls[0].Name != "b" {
					errs <- errors.New("turn 2 did not call b")
				}
			case 3:
				if models.KindOf(err) != models.ErrUnavailable {
					errs <- errors.New("turn 3 was not unavailable")
				}
			}
		}(i%3 + 1)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
