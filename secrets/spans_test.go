package secrets_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections/spans"
	"github.com/factline/factline/secrets"
)

// A secret that reached the facts (an older log, a runner that did not
// know it) is in no span the trace command exports: not in a tool's
// arguments, its result or error, the model's reply, the run's reason,
// nor in an encoding of any of these; the content itself still is.
func TestTraceSpansCarryNoSecret(t *testing.T) {
	r := secrets.New(secrets.Secret{Name: "OPENAI_API_KEY", Value: key})
	b64 := base64.StdEncoding.EncodeToString([]byte(key))
	var facts []events.Fact
	add := func(owner events.Owner, body events.Body) {
		f, err := events.NewFact(events.Meta{Suite: "s", Run: "r1", TaskGeneration: 1, Position: uint64(len(facts) + 1),
			Producer: events.Producer{Service: owner, Instance: "x"}, At: time.Unix(int64(1_800_000_000+len(facts)), 0)}, body)
		if err != nil {
			t.Fatal(err)
		}
		facts = append(facts, f)
	}
	d := events.DigestOf([]byte("x"))
	add(events.OwnerMeter, events.RunRequested{Case: "c", CaseDigest: d, Treatment: "t", TreatmentDigest: d, Trial: 1})
	add(events.OwnerRunner, events.TurnStarted{Turn: 1, ContextDigest: d})
	add(events.OwnerRunner, events.ModelReplied{Turn: 1, Provider: "openai", Model: "m", Text: "use the key " + key,
		Calls: []events.ToolCall{{ID: "c1", Name: "http_call", Args: `{"headers":{"Authorization":"Bearer ` + key + `"}}`, ArgsDigest: d}}})
	add(events.OwnerRunner, events.DispatchIntended{Turn: 1, CallID: "c1", Tool: "http_call", OperationID: "op", ArgsDigest: d, Effect: events.EffectExternal})
	add(events.OwnerRunner, events.DispatchCompleted{Turn: 1, Output: "echo: " + b64,
		Error:    &events.ToolError{Code: "HTTP_STATUS", Message: "401: bad key " + key},
		Dispatch: events.CompletedDispatch{CallID: "c1", EvidenceRef: "e", Disposition: events.DispositionExecuted, Mutation: events.MutationNotApplicable, Verification: events.NotVerifier()}})
	add(events.OwnerRunner, events.RunEnded{Status: events.RunErrored, Reason: "model_error: key " + key + " refused"})

	var all strings.Builder
	for _, s := range spans.Project(facts, spans.Options{Content: true, Redact: r.Redact}) {
		all.WriteString(s.Name + " " + s.StatusMessage + "\n")
		for _, a := range s.Attrs {
			all.WriteString(a.Key + "=" + a.Value.Str + strings.Join(a.Value.Strings, ",") + "\n")
		}
		for _, e := range s.Events {
			for _, a := range e.Attrs {
				all.WriteString(a.Key + "=" + a.Value.Str + "\n")
			}
		}
	}
	text := all.String()
	for _, form := range []string{key, b64} {
		if strings.Contains(text, form) {
			t.Errorf("%q reached a span:\n%s", form, text)
		}
	}
	for _, content := range []string{"use the key", "Authorization", "echo: ", "401: bad key", "model_error"} {
		if !strings.Contains(text, content) {
			t.Errorf("%q is not in the spans: the content was dropped, not redacted", content)
		}
	}
	if strings.Count(text, secrets.Marker("OPENAI_API_KEY")) < 5 {
		t.Errorf("want the marker in each of the five places:\n%s", text)
	}
}
