package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/models/openai"
	"github.com/factline/factline/models/scripted"
	"github.com/factline/factline/services/runner/step"
)

// goldenFacts is a run that exercises every part of a history: calls and
// a reply without any, several calls in one reply, a stall retry's and a
// stop decider's feedback, a steer taken in mid-turn and one between
// turns, text a renderer must escape, and long observations a token bound
// drops.
func goldenFacts(t *testing.T) []events.Fact {
	t.Helper()
	call := func(id, name, args string) events.ToolCall {
		return events.ToolCall{ID: events.CallID(id), Name: name, Args: args, ArgsDigest: events.DigestOf([]byte(args))}
	}
	done := func(turn uint32, id, ref, out string) events.DispatchCompleted {
		return events.DispatchCompleted{Turn: turn, Output: out, Dispatch: events.CompletedDispatch{CallID: events.CallID(id),
			EvidenceRef: events.EvidenceRef(ref), Disposition: events.DispositionExecuted, Tool: "read_file",
			Mutation: events.MutationNotApplicable, Verification: events.NotVerifier()}}
	}
	started := func(turn uint32) events.TurnStarted {
		return events.TurnStarted{Turn: turn, ContextDigest: events.DigestOf([]byte{byte(turn)}), Reserve: 3}
	}
	long := strings.Repeat("line of output <b>&amp;</b> é\n", 20)
	bodies := []events.Body{
		started(1),
		events.ModelReplied{Turn: 1, Provider: "scripted", Text: "looking <around> & \"quoted\"",
			Calls: []events.ToolCall{call("c1", "read_file", `{"path":"a.txt"}`), call("c2", "list_files", `{}`)}},
		done(1, "c1", "t1/c1", `{"ok":true,"output":"hello"}`),
		done(1, "c2", "t1/c2", long),
		events.StallObserved{Turn: 1, Observation: events.StallObservation{Position: 5,
			Action: ptr(events.Retry(events.StallRetry{Cause: "repeat", Feedback: "try something else", Remaining: 1}))}},
		events.StopDecided{Decision: events.StopDecision{DecisionID: "d1", Turn: 1, TaskGeneration: 1,
			Result: events.ContinueWith("cite the passing check", "tests")}},
		started(2),
		events.ControlAccepted{Control: events.ControlRef{ID: "s1", Signal: events.SignalSteer}, Instruction: "also the README"},
		events.TaskGenerationStarted{Generation: 2, Instruction: "also the README"},
		events.ModelReplied{Turn: 2, Provider: "scripted", Text: "", Calls: []events.ToolCall{call("c1", "run_command", `{"command":"go test ./..."}`)}},
		done(2, "c1", "t2/c1", long),
		events.StopDecided{Decision: events.StopDecision{DecisionID: "d2", Turn: 2, TaskGeneration: 2, Result: events.ContinueWith("")}},
		started(3),
		events.ModelReplied{Turn: 3, Provider: "scripted", Text: "I think it is done", Calls: []events.ToolCall{}},
		events.StopDecided{Decision: events.StopDecision{DecisionID: "d3", Turn: 3, TaskGeneration: 2,
			Result: events.ContinueWith("no check passed yet", "tests")}},
		events.TaskGenerationStarted{Generation: 3, Instruction: "and keep the API"},
		started(4),
		events.ModelReplied{Turn: 4, Provider: "scripted", Text: "reading", Calls: []events.ToolCall{call("c9", "read_file", `{"path":"b.txt"}`)}},
		done(4, "c9", "t4/c9", long),
		events.StopDecided{Decision: events.StopDecision{DecisionID: "d4", Turn: 4, TaskGeneration: 3, Result: events.ContinueWith("")}},
		events.TaskGenerationStarted{Generation: 4, Instruction: "a steer no turn has seen yet"},
	}
	var out []events.Fact
	gen := uint32(1)
	for i, b := range bodies {
		if g, ok := b.(events.TaskGenerationStarted); ok {
			gen = g.Generation
		}
		f, err := events.NewFact(events.Meta{Suite: "s", Run: "r1", TaskGeneration: gen, Position: uint64(i + 1),
			Producer: events.Producer{Service: b.Kind().Owner(), Instance: "t"}}, b)
		if err != nil {
			t.Fatalf("fact %d: %v", i, err)
		}
		out = append(out, f)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// The model request a history renders to is part of the log's contract: a
// takeover checks the digest of the request it rebuilds against the one
// the dead runner committed, possibly with an older build of the runner.
// These digests were taken from the runner before its history moved into
// the pure core; any change to what History produces (a message, its
// order, a field, nil against empty) changes them.
//
// The system prompt is the one a treatment without a scaffold renders
// (cases.SystemPrompt): today's default, byte for byte.
func TestRenderedRequestsStayByteIdentical(t *testing.T) {
	facts := goldenFacts(t)
	plain, err := cases.ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: scripted, scripts: s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	system, err := cases.SystemPrompt(&cases.Case{ID: "c", Instruction: "fix the <bug> & ship"}, plain)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := scripted.Parse("golden", []byte("turns: [{}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	om, err := openai.New(openai.Config{BaseURL: "http://127.0.0.1:1/v1", Model: "golden-model"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		upTo     int // facts before the turn's turn.started (0: all)
		policy   cases.ContextPolicy
		tokens   int
		scripted string
		openai   string
	}{
		{"full", 0, cases.ContextPolicy{Mode: cases.ContextFull},
			783, "sha256:97b6ee3d77277761901dfae907acd67d82c3aa18c333390f8da7f6a35fde02c9",
			"sha256:437934eabbea6b696098214f24f7fdc4c72bd875b38cfc5e8309b5c3a7c78248"},
		{"full before turn 2", 6, cases.ContextPolicy{Mode: cases.ContextFull},
			361, "sha256:026360a4be1cdfe101da240b75b0d902fc533e9be27dccba18dc4ed07295b327",
			"sha256:7e36dd4ba5cff94767f1e0b5d7c28b3ae6885732fced74290f2f6f4f6955e52d"},
		{"full under a bound", 0, cases.ContextPolicy{Mode: cases.ContextFull, MaxTokens: 10000},
			783, "sha256:97b6ee3d77277761901dfae907acd67d82c3aa18c333390f8da7f6a35fde02c9",
			"sha256:437934eabbea6b696098214f24f7fdc4c72bd875b38cfc5e8309b5c3a7c78248"},
		{"window", 0, cases.ContextPolicy{Mode: cases.ContextWindow, WindowTurns: 1},
			375, "sha256:e645d8f1da4d4509b8d72038313dfd8fb703784186ae69e917e8ec80b7f2f128",
			"sha256:a32861a51dbfcd253aa25c21d5ed68cae53ee37f9ca5f2d1827006c1f080ca60"},
		{"window keeping a tool", 0, cases.ContextPolicy{Mode: cases.ContextWindow, WindowTurns: 1, KeepTools: []string{"list_files"}},
			603, "sha256:33a576f8fd67ed5e465e97823b757721da923f83d6b0c46a2f52d3f3b9f46f0f",
			"sha256:4e990194bb24768d5d298cb0e752210cf52b56ada22e95085ef866398cd93984"},
		{"window dropping to fit", 0, cases.ContextPolicy{Mode: cases.ContextWindow, WindowTurns: 4, MaxTokens: 700},
			555, "sha256:381fd57ff01d481f7be189a4465506e16a257432a60a60560e0d90615bb671e2",
			"sha256:7602c017914fad29331b2a404f1ac014e6a67d1f7fa8e76dba79c68c0e99b1cf"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := facts
			if c.upTo > 0 {
				fs = facts[:c.upTo]
			}
			msgs, tokens, err := history(system, "fix the <bug> & ship", fs, c.policy)
			if err != nil {
				t.Fatal(err)
			}
			req := models.Request{Messages: msgs, Settings: models.Settings{Model: "golden-model"}, Turn: 5}
			sb, err := sm.Render(req)
			if err != nil {
				t.Fatal(err)
			}
			ob, err := om.Render(req)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d messages, %d tokens, scripted %s, openai %s", len(msgs), tokens, events.DigestOf(sb), events.DigestOf(ob))
			if tokens != c.tokens || string(events.DigestOf(sb)) != c.scripted || string(events.DigestOf(ob)) != c.openai {
				t.Errorf("tokens %d, scripted %s, openai %s; want %d, %s, %s", tokens, events.DigestOf(sb), events.DigestOf(ob), c.tokens, c.scripted, c.openai)
			}
		})
	}
	_, tokens, err := history(system, "fix it", facts, cases.ContextPolicy{Mode: cases.ContextWindow, WindowTurns: 1, MaxTokens: 100})
	var ce *step.ContextError
	if !errors.As(err, &ce) || ce.Need != tokens || ce.Budget != 100 || ce.Mode != cases.ContextWindow ||
		ce.Error() != "context budget too small: the window policy must keep about 371 tokens, the budget is 100" {
		t.Errorf("too small a bound: %v (%+v), %d tokens", err, ce, tokens)
	}
}
