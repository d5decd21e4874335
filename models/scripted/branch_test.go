package scripted

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/factline/factline/models"
)

const branchScript = `turns:
  - text: still stuck
    calls:
      - {name: run_command, args: {command: ./test.sh}}
    usage: {input_tokens: 10, output_tokens: 1, cost: 1}
    reserve: 3
    branches:
      - request_contains: "did not change"
        text: the harness says my runs change nothing
        calls:
          - {name: edit_file, args: {path: a.sh}}
          - {id: again, name: run_command, args: {command: ./test.sh}}
        usage: {input_tokens: 20, output_tokens: 2, cost: 2}
        reserve: 5
      - request_contains: "[harness]"
        error: unavailable
        reserve: 7
`

func request(turn int, contents ...string) models.Request {
	req := models.Request{Turn: turn}
	for i, c := range contents {
		role := models.RoleUser
		if i%2 == 1 {
			role = models.RoleTool
		}
		req.Messages = append(req.Messages, models.Message{Role: role, Content: c})
	}
	return req
}

// A turn answers by what the model is sent: the first branch whose text
// occurs in a message of the request replaces the turn's own reply, its
// reserve too; with none matching, the turn answers as written.
func TestABranchAnswersWhenTheRequestHoldsItsText(t *testing.T) {
	m := mustParse(t, branchScript)
	ctx := context.Background()

	plain := request(1, "fix the test", "FAIL: 1 test")
	got, err := m.Complete(ctx, plain)
	if err != nil || got.Text != "still stuck" || len(got.Calls) != 1 || got.Usage.InputTokens != 10 || m.Reserve(plain) != 3 {
		t.Fatalf("no branch matches: %+v %v, reserve %d", got, err, m.Reserve(plain))
	}

	fed := request(1, "fix the test", "FAIL: 1 test", "[harness] Check failed 2 times on a workspace that did not change in between.")
	got, err = m.Complete(ctx, fed)
	if err != nil || got.Text != "the harness says my runs change nothing" || got.Usage.InputTokens != 20 || m.Reserve(fed) != 5 {
		t.Fatalf("the first branch: %+v %v, reserve %d", got, err, m.Reserve(fed))
	}
	if len(got.Calls) != 2 || got.Calls[0].ID != "call-1-1" || got.Calls[1].ID != "again" || got.Finish != models.FinishToolCalls {
		t.Fatalf("the branch's calls: %+v", got.Calls)
	}

	// Only the first match answers; the second branch needs its own text
	// without the first's.
	other := request(1, "[harness] Repeating it gives no new information.")
	_, err = m.Complete(ctx, other)
	var me *models.Error
	if !errors.As(err, &me) || me.Kind != models.ErrUnavailable || m.Reserve(other) != 7 {
		t.Fatalf("the second branch: %v, reserve %d", err, m.Reserve(other))
	}

	// Matching is exact: case matters, and a call's arguments are not
	// message text.
	if got, _ := m.Complete(ctx, request(1, "DID NOT CHANGE")); got.Text != "still stuck" {
		t.Fatalf("matched another case: %+v", got)
	}
	args := models.Request{Turn: 1, Messages: []models.Message{{Role: models.RoleAssistant,
		ToolCalls: []models.ToolCall{{ID: "x", Name: "note", Args: `{"text":"did not change"}`}}}}}
	if got, _ := m.Complete(ctx, args); got.Text != "still stuck" {
		t.Fatalf("matched a call's arguments: %+v", got)
	}
}

// A branch is a reply of its own: the turn's text, calls and usage are not
// merged into it.
func TestABranchInheritsNothing(t *testing.T) {
	m := mustParse(t, "turns:\n  - text: a\n    usage: {input_tokens: 1, output_tokens: 1}\n    branches:\n      - {request_contains: go, text: b}\n")
	got, err := m.Complete(context.Background(), request(1, "go"))
	if err != nil || got.Text != "b" || got.Usage != nil || got.Finish != models.FinishStop {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestBranchParseErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"turns:\n  - text: a\n    branches:\n      - {text: b}\n", "t.yaml:4:9: turn 1, branch 1: request_contains: a branch needs request_contains"},
		{"turns:\n  - text: a\n    branches:\n      - {request_contains: '', text: b}\n", "turn 1, branch 1: request_contains: empty text matches every request"},
		{"turns:\n  - text: a\n    request_contains: x\n", "turn 1: request_contains: only a branch has request_contains"},
		{"turns:\n  - text: a\n    branches: {request_contains: x}\n", "turn 1: branches: want a list of branches"},
		{"turns:\n  - text: a\n    branches:\n      - request_contains: x\n        branches: []\n", "turn 1, branch 1: branches: a branch has no branches of its own"},
		{"turns:\n  - text: a\n    branches:\n      - request_contains: x\n        calls:\n          - {args: {}}\n", "turn 1, branch 1, call 1: name: a call needs a name"},
		{"turns:\n  - text: a\n    branches:\n      - request_contains: x\n        colour: red\n", "turn 1, branch 1: colour: unknown key (known keys: request_contains, text, calls, usage, reserve, finish, error, retry_after, delay)"},
		{"turns:\n  - text: a\n    branches:\n      - just text\n", "turn 1, branch 1: a branch is a mapping with request_contains"},
	} {
		_, err := Parse("t.yaml", []byte(c.src))
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant …%s…", c.src, err, c.want)
		}
	}
}
