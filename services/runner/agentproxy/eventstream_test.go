package agentproxy_test

import (
	"encoding/json"
	"testing"

	"github.com/factline/factline/models"
	"github.com/factline/factline/services/runner/agentproxy"
)

// Every streamed event of the Messages and Responses wires repeats its
// name as its data's type; the Responses events alone are numbered, from 0
// in the order they are sent.
func TestStreamedEventsNameThemselvesAndResponsesNumbersThem(t *testing.T) {
	r := models.Reply{Text: "hi", Calls: []models.ToolCall{{ID: "c1", Name: "f", Args: `{}`}}}
	msgs, err := agentproxy.EncodeMessagesStream("msg_1", "m", r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := agentproxy.EncodeResponsesStream("resp_1", "m", 1, r)
	if err != nil {
		t.Fatal(err)
	}
	for wire, events := range map[string][]agentproxy.Event{"messages": msgs, "responses": resp} {
		if len(events) < 2 {
			t.Fatalf("%s: %d events", wire, len(events))
		}
		for i, e := range events {
			var data struct {
				Type string `json:"type"`
				Seq  *int   `json:"sequence_number"`
			}
			if err := json.Unmarshal(e.Data, &data); err != nil {
				t.Fatalf("%s event %d: %v", wire, i, err)
			}
			if data.Type != e.Name {
				t.Errorf("%s event %d: type %q, name %q", wire, i, data.Type, e.Name)
			}
			switch {
			case wire == "messages" && data.Seq != nil:
				t.Errorf("messages event %d is numbered %d", i, *data.Seq)
			case wire == "responses" && (data.Seq == nil || *data.Seq != i):
				t.Errorf("responses event %d: sequence_number %v, want %d", i, data.Seq, i)
			}
		}
	}
}
