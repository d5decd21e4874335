package anthropic

import (
	"encoding/json"
	"testing"
)

// FuzzParseReply checks that ParseReply never panics on any body, and that
// a reply it accepts is one the port can carry: its finish is named, its
// usage counts add up (the cache reads and writes and the thinking tokens
// are parts of the totals they belong to) and every call has an id, a
// name and JSON arguments. Seeds are in testdata/fuzz/FuzzParseReply.
func FuzzParseReply(f *testing.F) {
	f.Add([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}`))
	f.Add([]byte(`{"type":"message","content":[{"type":"tool_use","id":"t","name":"n","input":{"a":[1,2]}}],"stop_reason":"tool_use"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseReply(data)
		if err != nil {
			return
		}
		if r.Finish == "" {
			t.Fatal("an accepted reply without a finish")
		}
		for _, c := range r.Calls {
			if c.ID == "" || c.Name == "" || !json.Valid([]byte(c.Args)) {
				t.Fatalf("call %+v", c)
			}
		}
		if u := r.Usage; u != nil {
			parts := uint64(0)
			for _, p := range []*uint64{u.CachedInputTokens, u.CacheWriteInputTokens} {
				if p != nil {
					parts += *p
				}
			}
			if parts > u.InputTokens {
				t.Fatalf("usage %+v: the cache parts exceed the input", u)
			}
			if u.ReasoningTokens != nil && *u.ReasoningTokens > u.OutputTokens {
				t.Fatalf("usage %+v: thinking exceeds the output", u)
			}
			if u.Cost != nil {
				t.Fatal("ParseReply priced a reply; the model does")
			}
		}
	})
}
