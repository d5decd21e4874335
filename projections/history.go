package projections

import (
	"github.com/factline/factline/events"
)

// Exchange is one turn as the model saw it and answered: the digest of the
// exact request (its body is a blob), the reply, what each call returned,
// and the harness feedback the next turn carries (none for an external
// agent's turn: the agent builds its own context, and no feedback of the
// harness reaches it).
type Exchange struct {
	Turn       uint32        `json:"turn"`
	Generation uint32        `json:"task_generation"`
	Request    events.Digest `json:"request"`
	Reply      string        `json:"reply,omitempty"`
	// ReplyBlob names the reply's text when it was kept in a blob (too
	// large for a fact): Reply is then empty, and the blob holds it.
	ReplyBlob    events.Digest `json:"reply_blob,omitempty"`
	Calls        []HistoryCall `json:"calls,omitempty"`
	Feedback     []string      `json:"feedback,omitempty"`
	Instructions []string      `json:"steers,omitempty"`
	// agent is set for an external agent's turn (turn.started's policy
	// events.ContextPolicyAgent), whose next request carries no feedback.
	agent bool
}

// HistoryCall is one tool call and its observation.
type HistoryCall struct {
	ID   string `json:"id"`
	Tool string `json:"tool"`
	Args string `json:"args,omitempty"`
	// ArgsBlob names the arguments when they were kept in a blob (too
	// large for a fact): Args is then empty, and the blob holds them.
	ArgsBlob    events.Digest `json:"args_blob,omitempty"`
	Observation string        `json:"observation,omitempty"`
}

// History is the state of the history projection: each run's exchanges.
type History map[string][]*Exchange

// HistoryFold rebuilds the model-visible history of every run from the
// log: what the model was sent (by digest) and answered, turn by turn.
var HistoryFold = Fold[History]{
	Key:  "history",
	Help: "the model-visible history of every run, turn by turn",
	Init: func() History { return History{} },
	Apply: func(s History, f events.Fact) History {
		key := f.Suite + "/" + f.Run
		last := func() *Exchange {
			if n := len(s[key]); n > 0 {
				return s[key][n-1]
			}
			return nil
		}
		switch b := f.Body.(type) {
		case events.TurnStarted:
			s[key] = append(s[key], &Exchange{Turn: b.Turn, Generation: f.TaskGeneration, Request: b.ContextDigest,
				agent: b.Policy == events.ContextPolicyAgent})
		case events.ModelReplied:
			if x := last(); x != nil && x.Turn == b.Turn {
				x.Reply = b.Text
				if b.TextInBlob() {
					x.ReplyBlob = b.TextDigest
				}
				for _, c := range b.Calls {
					hc := HistoryCall{ID: string(c.ID), Tool: c.Name, Args: c.Args}
					if c.ArgsInBlob() {
						hc.ArgsBlob = c.ArgsDigest
					}
					x.Calls = append(x.Calls, hc)
				}
			}
		case events.DispatchCompleted:
			if x := last(); x != nil && x.Turn == b.Turn {
				for i := range x.Calls {
					if x.Calls[i].ID == string(b.Dispatch.CallID) {
						x.Calls[i].Observation = b.Output
					}
				}
			}
		case events.StallObserved:
			if r, ok := stallFeedback(b); ok {
				if x := last(); x != nil && !x.agent {
					x.Feedback = append(x.Feedback, r)
				}
			}
		case events.StopDecided:
			if c, ok := b.Decision.Result.Variant().(events.StopContinue); ok && c.Feedback != "" {
				if x := last(); x != nil && !x.agent {
					x.Feedback = append(x.Feedback, c.Feedback)
				}
			}
		case events.TaskGenerationStarted:
			if x := last(); x != nil {
				x.Instructions = append(x.Instructions, b.Instruction)
			}
		}
		return s
	},
	View: func(s History) any {
		type run struct {
			Run       string      `json:"run"`
			Exchanges []*Exchange `json:"exchanges"`
		}
		out := []run{}
		for _, k := range sortedKeys(s) {
			out = append(out, run{Run: k, Exchanges: s[k]})
		}
		return out
	},
}

func stallFeedback(b events.StallObserved) (string, bool) {
	if a := b.Observation.Action; a != nil {
		if r, ok := a.Variant().(events.StallRetry); ok {
			return r.Feedback, true
		}
	}
	return "", false
}

func init() { Register(HistoryFold) }
