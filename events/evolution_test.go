package events_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/factline/factline/events"
)

// Schema evolution: a reader ignores what it does not know and gives missing
// optional fields their documented defaults (docs/facts.md, "Compatibility
// rules"). The tests edit real facts as generic msgpack maps, the way an
// older or newer writer in any language would produce them.

// addUnknown adds an unknown key to every map in the tree: the envelope, the
// producer, the body, nested structs, array elements and union maps.
func addUnknown(v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, child := range v {
			addUnknown(child)
		}
		v["zz_added_by_a_newer_writer"] = map[string]any{"nested": []any{int64(1), "two", nil, 3.5}}
	case []any:
		for _, child := range v {
			addUnknown(child)
		}
	}
}

func TestDecodeIgnoresUnknownFields(t *testing.T) {
	for _, c := range goldenFacts(t) {
		t.Run(c.name, func(t *testing.T) {
			m := wireMap(t, c.fact)
			addUnknown(m)
			if _, ok := walk(t, m, "body").(map[string]any)["zz_added_by_a_newer_writer"]; !ok {
				t.Fatal("the body did not get an unknown field")
			}
			got, err := events.Decode(wireBytes(t, m))
			if err != nil {
				t.Fatalf("unknown fields were not ignored: %v", err)
			}
			if !reflect.DeepEqual(got, c.fact) {
				t.Errorf("got\n  %#v\nwant\n  %#v", got, c.fact)
			}
		})
	}
}

// TestDecodeUnknownFieldsInUnions pins the union level explicitly: an extra
// key next to "type" is ignored, whatever the variant.
func TestDecodeUnknownFieldsInUnions(t *testing.T) {
	for _, tc := range []struct {
		base string
		path []any
	}{
		{"turn_completed_continue", []any{"body", "evidence", "actor_intent"}},
		{"turn_completed_propose_done", []any{"body", "evidence", "actor_intent"}},
		{"turn_completed_continue", []any{"body", "evidence", "dispatches", 1, "verification"}},
		{"stall_observed_escalate", []any{"body", "observation", "action"}},
		{"stop_decided_finish", []any{"body", "decision", "result"}},
		{"grade_verdict_pending", []any{"body", "verdict", "result"}},
	} {
		want := goldenFact(t, tc.base)
		m := wireMap(t, want)
		u := walk(t, m, tc.path...).(map[string]any)
		u["confidence"] = 0.9
		u["explanation"] = map[string]any{"by": "a newer writer"}
		got, err := events.Decode(wireBytes(t, m))
		if err != nil {
			t.Errorf("%s %v: %v", tc.base, tc.path, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %v: got %#v, want %#v", tc.base, tc.path, got, want)
		}
	}
}

func TestDecodeMissingOptionalFieldsTakeDefaults(t *testing.T) {
	tests := []struct {
		name   string
		base   string
		remove [][]any
		want   func(f *events.Fact) // what the fixture becomes
	}{
		{"model.replied without usage or text", "model_replied",
			[][]any{{"body", "usage"}, {"body", "text"}},
			func(f *events.Fact) {
				b := f.Body.(events.ModelReplied)
				b.Usage, b.Text = nil, ""
				f.Body = b
			}},
		{"model.replied without any optional field", "model_replied",
			[][]any{{"body", "model"}, {"body", "text"}, {"body", "calls"}, {"body", "usage"}, {"body", "finish"}, {"body", "reply_digest"}},
			func(f *events.Fact) {
				b := f.Body.(events.ModelReplied)
				f.Body = events.ModelReplied{Turn: b.Turn, Provider: b.Provider}
			}},
		{"usage without cost", "model_replied",
			[][]any{{"body", "usage", "cost"}},
			func(f *events.Fact) {
				b := f.Body.(events.ModelReplied)
				b.Usage = &events.Usage{InputTokens: b.Usage.InputTokens, OutputTokens: b.Usage.OutputTokens}
				f.Body = b
			}},
		{"tool call without args", "model_replied",
			[][]any{{"body", "calls", 0, "args"}},
			func(f *events.Fact) {
				b := f.Body.(events.ModelReplied)
				b.Calls = slices.Clone(b.Calls)
				b.Calls[0].Args = ""
				f.Body = b
			}},
		{"run.ended without spent tokens", "run_ended",
			[][]any{{"body", "spent", "tokens"}, {"body", "next_action"}},
			func(f *events.Fact) {
				b := f.Body.(events.RunEnded)
				b.Spent.Tokens, b.NextAction = nil, ""
				f.Body = b
			}},
		{"turn.completed without accepted control", "turn_completed_propose_done",
			[][]any{{"body", "evidence", "accepted_control"}},
			func(f *events.Fact) {
				b := f.Body.(events.TurnCompleted)
				b.Evidence.AcceptedControl = nil
				f.Body = b
			}},
		{"stall.observed without action", "stall_observed_retry",
			[][]any{{"body", "observation", "action"}},
			func(f *events.Fact) {
				b := f.Body.(events.StallObserved)
				b.Observation.Action = nil
				f.Body = b
			}},
		{"dispatch.completed without error", "dispatch_completed_error",
			[][]any{{"body", "error"}},
			func(f *events.Fact) {
				b := f.Body.(events.DispatchCompleted)
				b.Error = nil
				f.Body = b
			}},
		{"envelope without causation", "run_ended",
			[][]any{{"causation"}},
			func(f *events.Fact) { f.Causation = "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := goldenFact(t, tc.base)
			m := wireMap(t, want)
			for _, p := range tc.remove {
				del(t, m, p...)
			}
			got, err := events.Decode(wireBytes(t, m))
			if err != nil {
				t.Fatalf("an optional field was treated as required: %v", err)
			}
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got\n  %#v\nwant\n  %#v", got, want)
			}
		})
	}
}

// TestUsageUnknownIsNotZero pins the difference between "the provider
// reported no usage" (nil) and "the provider reported zero" (a zero Usage),
// and likewise for cost and spent tokens.
func TestUsageUnknownIsNotZero(t *testing.T) {
	replied := goldenFact(t, "model_replied_no_usage")
	if replied.Body.(events.ModelReplied).Usage != nil {
		t.Fatal("fixture model_replied_no_usage has usage")
	}
	checkRoundTrip(t, replied)
	m := wireMap(t, replied)
	if _, ok := walk(t, m, "body").(map[string]any)["usage"]; ok {
		t.Error("unknown usage is written to the wire; it must be absent")
	}

	zero := replied
	b := zero.Body.(events.ModelReplied)
	b.Usage = &events.Usage{Cost: new(uint64)}
	zero.Body = b
	checkRoundTrip(t, zero)
	got, err := events.Decode(mustEncode(t, zero))
	if err != nil {
		t.Fatal(err)
	}
	u := got.Body.(events.ModelReplied).Usage
	if u == nil || u.Cost == nil || *u.Cost != 0 {
		t.Errorf("reported zero usage decoded as %#v, want a zero Usage with a zero cost", u)
	}

	ended := goldenFact(t, "run_ended")
	e := ended.Body.(events.RunEnded)
	e.Spent.Tokens, e.Spent.Cost = new(uint64), nil
	ended.Body = e
	got, err = events.Decode(mustEncode(t, ended))
	if err != nil {
		t.Fatal(err)
	}
	spent := got.Body.(events.RunEnded).Spent
	if spent.Tokens == nil || *spent.Tokens != 0 || spent.Cost != nil {
		t.Errorf("spent decoded as tokens=%v cost=%v, want tokens=0 and cost unknown", spent.Tokens, spent.Cost)
	}
}
