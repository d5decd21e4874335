package extensions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner/tools"
)

// Error codes of extension calls, next to the built-in tools' codes.
const (
	// CodeToolError: the server answered the call with an error result
	// (isError). The call ran; the tool says it failed.
	CodeToolError = "TOOL_ERROR"
	// CodeExtensionError: the call failed at the protocol level (the
	// server refused it, crashed or closed the session). Whether an effect
	// happened is unknown to the runner.
	CodeExtensionError = "EXTENSION_ERROR"
)

// MetaOperation is the _meta key under which each call carries its
// operation ID, so that a server with external effects can deduplicate.
const MetaOperation = "factline/operation"

// Tool is one allowlisted tool of a running extension.
type Tool struct {
	server   string // the tool's name on the server
	ext      string // the extension's name
	contract tools.Contract
	session  *mcp.ClientSession
	// stray is what the server wrote on stdout that is no JSON-RPC and
	// stderrTail how its standard error ends ("" when it wrote none), for
	// a call that failed because the server did.
	stray, stderrTail func() string
}

// newTool builds the contract of an allowlisted tool: the name the model
// calls, the server's description and input schema (checked before every
// call), and the allowlist's effect class, approval rule, timeout and
// output cap. The server's annotations are not consulted.
func newTool(ext string, c Capability, t *mcp.Tool, session *mcp.ClientSession, stray, stderrTail func() string) (*Tool, error) {
	schema := json.RawMessage(`{"type":"object"}`)
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
		}
		schema = b
	}
	approval := tools.ApprovalNever
	if c.Approval == events.ApprovalAlways {
		approval = tools.ApprovalAlways
	}
	desc := fmt.Sprintf("[extension %s] %s", ext, t.Description)
	return &Tool{server: t.Name, ext: ext, session: session, stray: stray, stderrTail: stderrTail, contract: tools.Contract{
		Name: ext + Separator + c.Name, Description: strings.TrimSpace(desc), Schema: schema,
		Effect: c.Effect, Approval: approval, Timeout: c.Timeout.Std(), OutputCap: c.OutputCap,
	}}, nil
}

// Extension is the name of the extension the tool is of.
func (t *Tool) Extension() string { return t.ext }

// Contract implements tools.Tool.
func (t *Tool) Contract() tools.Contract { return t.contract }

// Run implements tools.Tool: it calls the tool on its server with
// arguments that already satisfied the schema, carrying the operation ID.
func (t *Tool) Run(ctx context.Context, env tools.Env, args json.RawMessage) tools.Result {
	params := &mcp.CallToolParams{Name: t.server, Arguments: args}
	if env.Operation != "" {
		params.Meta = mcp.Meta{MetaOperation: env.Operation}
	}
	res, err := t.session.CallTool(ctx, params)
	switch {
	case err != nil && ctx.Err() != nil:
		return tools.Result{Err: &events.ToolError{Code: tools.CodeTimeout,
			Message: fmt.Sprintf("%s did not answer in time (%v); the call was cancelled", t.contract.Name, ctx.Err())}}
	case err != nil:
		return tools.Result{Err: &events.ToolError{Code: CodeExtensionError, Message: t.protocolError(err)}}
	}
	out := render(res)
	if res.IsError {
		msg := firstLine(out)
		if msg == "" {
			msg = "the tool reported an error"
		}
		return tools.Result{Output: out, Err: &events.ToolError{Code: CodeToolError, Message: msg}}
	}
	return tools.Result{Output: out}
}

// protocolError says why a call failed at the protocol level. A session
// the server closed (it exited, crashed, or wrote what is no JSON-RPC) is
// never reopened, so the message says that every later call of the
// extension fails too, and how the server's standard error ends: without
// them "EOF" is all the model and the operator would read.
func (t *Tool) protocolError(err error) string {
	msg := fmt.Sprintf("%s: %v", t.contract.Name, err)
	switch stray := t.strayOutput(); {
	case stray != "":
		// The decoder's words ("invalid character 'd' looking for
		// beginning of value") name a byte, not the fault.
		msg = fmt.Sprintf("%s: %s; the session of extension %s is closed: its tools fail for the rest of the run", t.contract.Name, stray, t.ext)
	case errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed):
		msg += fmt.Sprintf("; the server of extension %s closed its session (it exited or crashed): its tools fail for the rest of the run", t.ext)
	}
	if t.stderrTail != nil {
		msg += t.stderrTail()
	}
	return msg
}

// strayOutput is what the server wrote on stdout that is no JSON-RPC, if
// anything.
func (t *Tool) strayOutput() string {
	if t.stray == nil {
		return ""
	}
	return t.stray()
}

// render turns a call result into the observation text: text content as
// it is, other content named by its kind, structured content as JSON when
// there is nothing else.
func render(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s]", c.URI))
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else {
				parts = append(parts, "[embedded resource]")
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
