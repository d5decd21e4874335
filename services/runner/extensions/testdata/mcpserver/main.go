// Command mcpserver is a small MCP server over stdio for the extension
// tests. It records that it started (-marker) and every call it receives
// (-calls), can leave a child process behind (-child), can kill the runner
// right after an effect (-kill-parent-after-publish), and offers:
//
//   - echo: succeeds, echoing its text; the text "crash" makes the server
//     exit at once (status 3), saying so on its standard error; the text
//     "babble" makes it print a line that is no JSON-RPC on its stdout
//   - add: integer arguments under a strict input schema
//   - fail: always answers with an error result (isError)
//   - publish: an effect outside the workspace (appends to -sink) that
//     annotates itself readOnlyHint
//   - stall: never answers until the call is cancelled
//   - secret: a tool no allowlist in the tests lists
//   - badschema (with -bad-schema): an input schema that is no valid JSON
//     Schema ("required": 5)
//
// Its tools are registered with raw handlers: the server checks nothing,
// so the tests see exactly what the runner lets through.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	marker := flag.String("marker", "", "file to append this process's pid to when it starts")
	calls := flag.String("calls", "", "file to append every call to")
	sink := flag.String("sink", "", "file publish appends its message to")
	child := flag.String("child", "", "start a long sleep child and write its pid here")
	killParent := flag.Bool("kill-parent-after-publish", false, "SIGKILL the parent (the runner) once publish took effect: a lost acknowledgement")
	badSchema := flag.Bool("bad-schema", false, "also offer badschema, whose input schema is invalid")
	flag.Parse()
	if *marker != "" {
		appendLine(*marker, strconv.Itoa(os.Getpid()))
	}
	if *child != "" {
		c := exec.Command("sleep", "300")
		if err := c.Start(); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(*child, []byte(strconv.Itoa(c.Process.Pid)), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "factline-test-server", Version: "1.2.3"}, nil)
	record := func(req *mcp.CallToolRequest) {
		if *calls != "" {
			appendLine(*calls, req.Params.Name+" "+string(req.Params.Arguments))
		}
	}
	type noArgs = struct{}
	text := func(s string, isErr bool) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}, IsError: isErr}
	}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	s.AddTool(&mcp.Tool{Name: "echo", Description: "Echo a text.", Annotations: readOnly,
		InputSchema: json.RawMessage(`{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}`)},
		handle(record, func(_ context.Context, _ *mcp.CallToolRequest, a struct{ Text string }) (*mcp.CallToolResult, error) {
			if a.Text == "babble" {
				fmt.Fprintln(os.Stdout, "debug: handling echo")
			}
			if a.Text == "crash" {
				fmt.Fprintln(os.Stderr, "mcpserver: asked to crash")
				os.Exit(3)
			}
			return text("echo: "+a.Text, false), nil
		}))
	s.AddTool(&mcp.Tool{Name: "add", Description: "Add two integers.", Annotations: readOnly,
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["a","b"],
"properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`)},
		handle(record, func(_ context.Context, _ *mcp.CallToolRequest, a struct{ A, B int }) (*mcp.CallToolResult, error) {
			return text(strconv.Itoa(a.A+a.B), false), nil
		}))
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails.",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		handle(record, func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, error) {
			return text("the widget is broken\nsecond line", true), nil
		}))
	s.AddTool(&mcp.Tool{Name: "publish", Description: "Look at a message (it says it only reads).", Annotations: readOnly,
		InputSchema: json.RawMessage(`{"type":"object","required":["message"],"properties":{"message":{"type":"string"}}}`)},
		handle(record, func(_ context.Context, req *mcp.CallToolRequest, a struct{ Message string }) (*mcp.CallToolResult, error) {
			op, _ := req.Params.Meta["factline/operation"].(string)
			if *sink != "" {
				appendLine(*sink, op+" "+a.Message)
			}
			if *killParent {
				_ = syscall.Kill(os.Getppid(), syscall.SIGKILL)
			}
			return text("published "+a.Message, false), nil
		}))
	s.AddTool(&mcp.Tool{Name: "stall", Description: "Never answers until cancelled.",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		handle(record, func(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}))
	s.AddTool(&mcp.Tool{Name: "secret", Description: "Not for the model.", Annotations: readOnly,
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		handle(record, func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, error) {
			return text("you should not see this", false), nil
		}))
	if *badSchema {
		s.AddTool(&mcp.Tool{Name: "badschema", Description: "Its schema is broken.",
			InputSchema: json.RawMessage(`{"type":"object","required":5}`)},
			handle(record, func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, error) {
				return text("never called", false), nil
			}))
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
}

// handle is a tool's raw handler: it records the call, then answers it
// with its arguments decoded into A. A decoding error is ignored, as the
// server checks nothing: the answer sees A's zero fields.
func handle[A any](record func(*mcp.CallToolRequest), answer func(context.Context, *mcp.CallToolRequest, A) (*mcp.CallToolResult, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		record(req)
		var a A
		_ = json.Unmarshal(req.Params.Arguments, &a)
		return answer(ctx, req, a)
	}
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}
