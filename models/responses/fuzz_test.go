package responses

import "testing"

// FuzzParseReply checks that ParseReply never panics on any body, and that
// a reply it accepts is one the port can carry: its finish is named, the
// cached, cache-written and reasoning tokens are parts of the totals they
// belong to and every call has an id and a name. Seeds are in
// testdata/fuzz/FuzzParseReply.
func FuzzParseReply(f *testing.F) {
	f.Add([]byte(`{"object":"response","status":"completed","model":"m","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}],"usage":{"input_tokens":3,"output_tokens":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseReply(data)
		if err != nil {
			return
		}
		if r.Finish == "" {
			t.Fatal("an accepted reply without a finish")
		}
		for _, c := range r.Calls {
			if c.ID == "" || c.Name == "" {
				t.Fatalf("call %+v", c)
			}
		}
		if u := r.Usage; u != nil {
			for _, p := range []*uint64{u.CachedInputTokens, u.CacheWriteInputTokens} {
				if p != nil && *p > u.InputTokens {
					t.Fatalf("usage %+v: a part exceeds the input", u)
				}
			}
			if u.ReasoningTokens != nil && *u.ReasoningTokens > u.OutputTokens {
				t.Fatalf("usage %+v: reasoning exceeds the output", u)
			}
			if u.Cost != nil {
				t.Fatal("ParseReply priced a reply; the model does")
			}
		}
	})
}
