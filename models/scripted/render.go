package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/factline/factline/models"
)

// renderRequest is the provider-neutral request as Render shows it.
type renderRequest struct {
	Messages []models.Message  `json:"messages"`
	Tools    []models.ToolSpec `json:"tools,omitempty"`
	Settings models.Settings   `json:"settings"`
	// ToolChoice and Output sort after "messages" as the canonical form
	// needs, and are absent when the request has none: requests made
	// before they existed render as they did.
	ToolChoice *models.ToolChoice `json:"tool_choice,omitempty"`
	Output     *models.Output     `json:"output,omitempty"`
}

// emptyMessages is how the canonical form of a request without messages
// starts; the rest of it is the settings and the tools.
const emptyMessages = `{"messages":[]`

// Render returns the canonical JSON of the provider-neutral request: an
// object with "messages" (always an array), "tools" (omitted when there are
// none), "settings", and "tool_choice" and "output" when the request has
// them, with the field names of the models package, object
// keys sorted at every level (tool parameter schemas included), no
// insignificant whitespace, no HTML escaping and numbers as written. For the
// scripted provider this is the exact request: nothing else is sent
// anywhere. Request.Turn is not part of it. Render fails when a tool's
// parameters are not valid JSON.
//
// A run's requests repeat the messages of the one before, so each
// message's canonical form is kept from the previous Render and only
// messages not rendered at the same place last time are encoded: a turn's
// render costs what the turn added, not the whole history again. The
// canonical form of an array is its elements' canonical forms joined, so
// the bytes are those of canonicalising the whole request at once.
func (m *Model) Render(req models.Request) ([]byte, error) {
	raw, err := json.Marshal(renderRequest{Messages: []models.Message{}, Tools: req.Tools, Settings: req.Settings,
		ToolChoice: req.ToolChoice, Output: req.Output})
	if err != nil {
		return nil, fmt.Errorf("scripted: render request: %w", err)
	}
	rest, err := canonicalJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("scripted: render request: %w", err)
	}
	if !bytes.HasPrefix(rest, []byte(emptyMessages)) {
		return nil, fmt.Errorf("scripted: render request: canonical form starts %.20q, not with the messages", rest)
	}
	msgs, err := m.rendered.messages(req.Messages)
	if err != nil {
		return nil, fmt.Errorf("scripted: render request: %w", err)
	}
	n := len(rest) + len(msgs)
	for _, j := range msgs {
		n += len(j)
	}
	out := make([]byte, 0, n)
	out = append(out, emptyMessages[:len(emptyMessages)-1]...)
	for i, j := range msgs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, j...)
	}
	return append(out, rest[len(emptyMessages)-1:]...), nil
}

// renderCache keeps the canonical form of the messages of the last
// request rendered, by their place in it.
type renderCache struct {
	mu   sync.Mutex
	msgs []models.Message // copies: a caller's later changes do not reach them
	json [][]byte
}

// messages returns the canonical form of each message, reusing those of
// the last call where the message at the same place is the same.
func (c *renderCache) messages(msgs []models.Message) ([][]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := make([]models.Message, len(msgs))
	out := make([][]byte, len(msgs))
	for i, msg := range msgs {
		if i < len(c.msgs) && sameMessage(c.msgs[i], msg) {
			keep[i], out[i] = c.msgs[i], c.json[i]
			continue
		}
		raw, err := json.Marshal(msg)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if out[i], err = canonicalJSON(raw); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		keep[i] = msg
		keep[i].ToolCalls = append([]models.ToolCall(nil), msg.ToolCalls...)
	}
	c.msgs, c.json = keep, out
	return out, nil
}

// sameMessage reports whether a and b render the same: every field equal.
// An empty and a nil list of calls are the same (both are omitted).
func sameMessage(a, b models.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.ToolCallID != b.ToolCallID || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i] != b.ToolCalls[i] {
			return false
		}
	}
	return true
}

// canonicalJSON re-encodes a JSON document with sorted object keys, no
// whitespace and no HTML escaping; numbers keep their text.
func canonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return compactJSON(v)
}

// compactJSON encodes v (maps with sorted keys) without HTML escaping and
// without the trailing newline of json.Encoder.
func compactJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
