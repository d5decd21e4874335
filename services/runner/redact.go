package runner

import (
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/secrets"
	"github.com/factline/factline/services/runner/tools"
)

// Secrets are redacted where text enters the log: a model's reply before
// model.replied is made (so the argument digests are of what is stored,
// and what later runs is what the log says), a tool's result before its
// output is read for diagnostics, and every fact the runner commits as a
// last guard for error messages and reasons.

// redactReply removes secrets from what a model said.
func redactReply(r *secrets.Redactor, reply models.Reply) models.Reply {
	if r.Len() == 0 {
		return reply
	}
	reply.Text = r.Redact(reply.Text)
	reply.Model = r.Redact(reply.Model)
	reply.Calls = append([]models.ToolCall(nil), reply.Calls...)
	for i, c := range reply.Calls {
		reply.Calls[i].ID = r.Redact(c.ID)
		reply.Calls[i].Name = r.Redact(c.Name)
		reply.Calls[i].Args = r.Redact(c.Args)
	}
	return reply
}

// redactRequest removes secrets from what an external agent sent: its
// messages' text and its calls' arguments.
func redactRequest(r *secrets.Redactor, req models.Request) models.Request {
	if r.Len() == 0 {
		return req
	}
	msgs := make([]models.Message, len(req.Messages))
	for i, m := range req.Messages {
		m.Content = r.Redact(m.Content)
		if len(m.ToolCalls) > 0 {
			calls := make([]models.ToolCall, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				c.Args = r.Redact(c.Args)
				calls[j] = c
			}
			m.ToolCalls = calls
		}
		msgs[i] = m
	}
	req.Messages = msgs
	return req
}

// redactResult removes secrets from what a tool returned. An output the
// tool's cap cut may have cut a secret in two, leaving a part Redact does
// not know: that part is held back with the rest of what was cut.
func redactResult(r *secrets.Redactor, res tools.Result) tools.Result {
	if r.Len() == 0 {
		return res
	}
	res.Output = r.Redact(res.Output)
	if res.Truncated {
		res.Output = tools.HoldBackAtCuts(res.Output, r.PartialEnd, r.PartialStart)
	}
	res.Err = redactToolError(r, res.Err)
	return res
}

// redactToolError returns a copy of e with secrets removed from its
// message (nil for nil): the error may be shared with what the tool
// returned, so it is not changed in place.
func redactToolError(r *secrets.Redactor, e *events.ToolError) *events.ToolError {
	if e == nil {
		return nil
	}
	c := *e
	c.Message = r.Redact(c.Message)
	return &c
}

// redactBody removes secrets from the free text of a fact the runner is
// about to commit. Bodies whose text was redacted where it came in
// (model.replied) pass unchanged: their digests cover the stored text.
func redactBody(r *secrets.Redactor, b events.Body) events.Body {
	if r.Len() == 0 {
		return b
	}
	switch v := b.(type) {
	case events.DispatchCompleted:
		v.Output = r.Redact(v.Output)
		v.Error = redactToolError(r, v.Error)
		return v
	case events.RunEnded:
		v.Reason = r.Redact(v.Reason)
		v.NextAction = r.Redact(v.NextAction)
		return v
	case events.ControlAccepted:
		v.Instruction = r.Redact(v.Instruction)
		v.Reason = r.Redact(v.Reason)
		return v
	case events.TaskGenerationStarted:
		v.Instruction = r.Redact(v.Instruction)
		return v
	}
	return b
}

// redactErr hides secrets in an error the runner hands to the bus (which
// logs it and may put it in a dead letter), keeping what errors.Is and
// errors.As see.
func redactErr(r *secrets.Redactor, err error) error {
	if err == nil || r.Len() == 0 {
		return err
	}
	msg := r.Redact(err.Error())
	if msg == err.Error() {
		return err
	}
	return redactedError{msg: msg, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }
