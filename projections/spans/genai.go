package spans

import (
	"encoding/json"

	"github.com/factline/factline/events"
)

// providerName is a factline provider as the GenAI conventions'
// gen_ai.provider.name knows it: both OpenAI APIs are openai; a provider
// the conventions do not list keeps factline's name, prefixed.
func providerName(p string) string {
	switch p {
	case "openai", "openai-responses":
		return "openai"
	case "anthropic":
		return "anthropic"
	case "":
		return ""
	}
	return "factline." + p
}

// model sets a model call's GenAI attributes and its name. Usage the
// provider did not report stays absent: unknown is never zero.
func (p *Projector) model(s *Span, provider, model string, u *events.Usage) {
	if provider != "" {
		name := providerName(provider)
		// gen_ai.system is the older conventions' name for the same
		// thing; tools that read one or the other both find it.
		s.Attrs = append(s.Attrs, Str("gen_ai.provider.name", name), Str("gen_ai.system", name), Str("factline.model.provider", provider))
	}
	if model != "" {
		s.Attrs = append(s.Attrs, Str("gen_ai.request.model", model), Str("gen_ai.response.model", model))
		if s.Name == "" || s.Kind == KindClient {
			s.Name = "chat " + model
		}
	}
	if u == nil {
		return
	}
	s.Attrs = append(s.Attrs, Int("gen_ai.usage.input_tokens", u.InputTokens), Int("gen_ai.usage.output_tokens", u.OutputTokens))
	if u.CachedInputTokens != nil {
		s.Attrs = append(s.Attrs, Int("gen_ai.usage.cache_read.input_tokens", *u.CachedInputTokens))
	}
	if u.CacheWriteInputTokens != nil {
		s.Attrs = append(s.Attrs, Int("gen_ai.usage.cache_creation.input_tokens", *u.CacheWriteInputTokens))
	}
	if u.ReasoningTokens != nil {
		s.Attrs = append(s.Attrs, Int("factline.usage.reasoning_tokens", *u.ReasoningTokens))
	}
	if u.Cost != nil {
		s.Attrs = append(s.Attrs, Int("factline.usage.cost", *u.Cost))
	}
}

// modelReply sets what a model.replied says about its call.
func (p *Projector) modelReply(s *Span, b events.ModelReplied) {
	p.model(s, b.Provider, b.Model, b.Usage)
	s.Attrs = append(s.Attrs, Int("factline.turn", b.Turn), Int("factline.tool_calls", len(b.Calls)))
	if b.Finish != "" {
		s.Attrs = append(s.Attrs, Strs("gen_ai.response.finish_reasons", b.Finish))
	}
	if b.Cached != nil {
		s.Attrs = append(s.Attrs, Bool("factline.model.cached", true))
	}
	if b.TextInBlob() {
		// The text is not in the fact: the span says where it is.
		s.Attrs = append(s.Attrs, Str("factline.model.text_blob", string(b.TextDigest)))
	}
	if b.QueueWaitMs > 0 {
		s.Attrs = append(s.Attrs, Int("factline.model.queue_wait_ms", b.QueueWaitMs))
	}
	if p.o.Content {
		s.Attrs = append(s.Attrs, Str("gen_ai.output.messages", outputMessages(b.Text, b.Calls, b.Finish)))
	}
}

// dispatch sets a tool dispatch's attributes from its completion.
func (p *Projector) dispatch(s *Span, r *runState, b events.DispatchCompleted) {
	d := b.Dispatch
	tool := d.Tool
	if tool == "" && s.Name != "" {
		tool = s.Name[len("execute_tool "):]
	}
	s.Name = "execute_tool " + tool
	s.Attrs = append(s.Attrs, Str("gen_ai.operation.name", "execute_tool"), Str("gen_ai.tool.name", tool), Str("gen_ai.tool.type", "function"),
		Str("gen_ai.tool.call.id", string(d.CallID)), Int("factline.turn", b.Turn),
		Str("factline.dispatch.disposition", string(d.Disposition)), Str("factline.dispatch.mutation", string(d.Mutation)),
		Str("factline.dispatch.verification", d.Verification.Type()))
	effect, known := r.effects[d.CallID]
	if known {
		s.Attrs = append(s.Attrs, Str("factline.tool.effect", string(effect)))
	}
	if outcome := outcomeOf(effect, b); outcome != "" {
		s.Attrs = append(s.Attrs, Str("factline.dispatch.outcome", outcome))
	}
	if d.Check != "" {
		s.Attrs = append(s.Attrs, Str("factline.check", d.Check))
	}
	if b.Error != nil {
		s.Status, s.StatusMessage = StatusError, b.Error.Code
		s.Attrs = append(s.Attrs, Str("error.type", b.Error.Code), Bool("factline.tool.error.retryable", b.Error.Retryable))
	}
	if blob, ok := r.argsBlob[d.CallID]; ok {
		// The arguments are not in the fact: the span says where they are.
		s.Attrs = append(s.Attrs, Str("factline.tool.args_blob", string(blob)))
	}
	if p.o.Content {
		if args, ok := r.args[d.CallID]; ok {
			s.Attrs = append(s.Attrs, Str("gen_ai.tool.call.arguments", args))
		}
		s.Attrs = append(s.Attrs, Str("gen_ai.tool.call.result", b.Output))
		if b.Error != nil && b.Error.Message != "" {
			s.Attrs = append(s.Attrs, Str("factline.tool.error.message", b.Error.Message))
		}
	}
}

// outcomeOf is what an external or irreversible effect did: as recorded,
// or for facts older than the field inferred the way docs/facts.md says
// readers must (executed without error applied; rejected, or refused by
// the sink with HTTP_STATUS, did not; anything else is unknown). A
// workspace tool has none.
func outcomeOf(effect events.EffectClass, b events.DispatchCompleted) string {
	if b.Dispatch.Outcome != "" {
		return b.Dispatch.Outcome
	}
	if !effect.IsEffect() {
		return ""
	}
	switch {
	case b.Dispatch.Disposition == events.DispositionRejected, b.Error != nil && b.Error.Code == "HTTP_STATUS":
		return "not_applied"
	case b.Dispatch.Disposition == events.DispositionExecuted && b.Error == nil:
		return "applied"
	}
	return "unknown"
}

// outputMessages is a reply in the GenAI conventions' output message
// form (one assistant message of text and tool-call parts), as JSON.
func outputMessages(text string, calls []events.ToolCall, finish string) string {
	type part struct {
		Type      string `json:"type"`
		Content   string `json:"content,omitempty"`
		ID        string `json:"id,omitempty"`
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments,omitempty"`
	}
	type message struct {
		Role         string `json:"role"`
		Parts        []part `json:"parts"`
		FinishReason string `json:"finish_reason,omitempty"`
	}
	m := message{Role: "assistant", Parts: []part{}, FinishReason: finish}
	if text != "" {
		m.Parts = append(m.Parts, part{Type: "text", Content: text})
	}
	for _, c := range calls {
		m.Parts = append(m.Parts, part{Type: "tool_call", ID: string(c.ID), Name: c.Name, Arguments: c.Args})
	}
	out, _ := json.Marshal([]message{m}) // plain strings: cannot fail
	return string(out)
}
