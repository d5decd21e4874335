// Command miniagent is a small coding agent written for factline's tests
// and examples of external agents (docs/agents.md): it speaks OpenAI Chat
// Completions to OPENAI_BASE_URL with OPENAI_API_KEY, offers three tools of
// its own (write_file, read_file, run_command) run in its working
// directory, and stops when a reply asks for no tool. It is no agent
// anyone else wrote: the example's real agent is an npm package.
//
//	miniagent [--stream] [--keep-going] [--linger D] [--answer-file FILE] [--pidfile FILE] [--misanswer] [--retries N] INSTRUCTION   (INSTRUCTION "-": read stdin)
//	miniagent --version
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// maxCalls bounds the agent's model calls.
const maxCalls = 50

type call struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type message struct {
	Role       string  `json:"role"`
	Content    *string `json:"content"`
	ToolCalls  []call  `json:"tool_calls,omitempty"`
	ToolCallID string  `json:"tool_call_id,omitempty"`
}

func str(s string) *string { return &s }

var tools = json.RawMessage(`[
 {"type":"function","function":{"name":"write_file","description":"Write a file","parameters":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}}},
 {"type":"function","function":{"name":"read_file","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},
 {"type":"function","function":{"name":"run_command","description":"Run a bash command","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}]`)

func main() {
	stream := flag.Bool("stream", false, "ask for server-sent events")
	pidfile := flag.String("pidfile", "", "write the process ID here first")
	version := flag.Bool("version", false, "print the version and exit")
	keepGoing := flag.Bool("keep-going", false, "after a reply with no tool call, ask again instead of stopping (until refused)")
	linger := flag.Duration("linger", 0, "after the final answer, stay alive this long before exiting (an agent that hangs once it has answered)")
	answerFile := flag.String("answer-file", "", "after the final answer (and --linger), write its text here, as an agent that hands in its answer as a file does")
	misanswer := flag.Bool("misanswer", false, "name, in each tool message, a call ID no call made (a broken agent, whose history a provider refuses)")
	retries := flag.Int("retries", 0, "after an answer of HTTP 400, send the same request again up to this many times before giving up")
	answerFormat := flag.String("answer-format", "", `ask, in every request, for tool_choice "auto" and an answer of this response_format type, as an agent with a structured output does: json_schema (of answerSchema) or json_object`)
	flag.Parse()
	switch *answerFormat {
	case "":
	case "json_schema":
		demands = map[string]any{"tool_choice": "auto", "response_format": map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "answer", "strict": true, "schema": answerSchema}}}
	default:
		demands = map[string]any{"tool_choice": "auto", "response_format": map[string]any{"type": *answerFormat}}
	}
	if *version {
		fmt.Println("miniagent 1.0")
		return
	}
	if *pidfile != "" {
		if err := os.WriteFile(*pidfile, []byte(fmt.Sprint(os.Getpid())), 0o644); err != nil {
			fail("pidfile: %v", err)
		}
	}
	instruction := strings.Join(flag.Args(), " ")
	if instruction == "-" || instruction == "" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			fail("stdin: %v", err)
		}
		instruction = string(b)
	}
	msgs := []message{{Role: "system", Content: str("You are miniagent. Use the tools.")}, {Role: "user", Content: str(instruction)}}
	for range maxCalls {
		reply, err := ask(msgs, *stream)
		for try := 0; errors.Is(err, errRefused) && try < *retries; try++ {
			reply, err = ask(msgs, *stream)
		}
		if err != nil {
			fail("%v", err)
		}
		msgs = append(msgs, reply)
		if len(reply.ToolCalls) == 0 {
			if reply.Content != nil {
				fmt.Println(*reply.Content)
			}
			if *keepGoing {
				msgs = append(msgs, message{Role: "user", Content: str("Go on.")})
				continue
			}
			time.Sleep(*linger)
			if *answerFile != "" && reply.Content != nil {
				if err := os.WriteFile(*answerFile, []byte(*reply.Content+"\n"), 0o644); err != nil {
					fail("answer file: %v", err)
				}
			}
			return
		}
		for _, c := range reply.ToolCalls {
			id := c.ID
			if *misanswer {
				id = "misanswered-" + id
			}
			msgs = append(msgs, message{Role: "tool", ToolCallID: id, Content: str(run(c))})
		}
	}
	fail("no answer after %d calls", maxCalls)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "miniagent: "+format+"\n", args...)
	os.Exit(3)
}

// errRefused is an answer of HTTP 400: the request itself was refused.
var errRefused = errors.New("request refused")

// demands are the request's members beyond the conversation that
// --answer-format asks for.
var demands map[string]any

// answerSchema is the JSON schema --answer-format json_schema asks the
// answer to take.
var answerSchema = json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"],"additionalProperties":false}`)

func ask(msgs []message, stream bool) (message, error) {
	members := map[string]any{"model": os.Getenv("OPENAI_MODEL"), "messages": msgs, "tools": tools, "stream": stream}
	for k, v := range demands {
		members[k] = v
	}
	body, _ := json.Marshal(members)
	req, err := http.NewRequest(http.MethodPost, strings.TrimRight(os.Getenv("OPENAI_BASE_URL"), "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return message{}, err
	}
	req.Header.Set("Authorization", "Bearer "+os.Getenv("OPENAI_API_KEY"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return message{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusBadRequest {
			return message{}, fmt.Errorf("%w: HTTP %d: %s", errRefused, resp.StatusCode, b)
		}
		return message{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	if !stream {
		var out struct {
			Choices []struct {
				Message message `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) == 0 {
			return message{}, fmt.Errorf("bad response: %v", err)
		}
		return out.Choices[0].Message, nil
	}
	m := message{Role: "assistant"}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						call
						Index int `json:"index"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return message{}, fmt.Errorf("bad chunk: %v", err)
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil {
				text.WriteString(*c.Delta.Content)
			}
			for _, tc := range c.Delta.ToolCalls {
				for len(m.ToolCalls) <= tc.Index {
					m.ToolCalls = append(m.ToolCalls, call{Type: "function"})
				}
				got := &m.ToolCalls[tc.Index]
				if tc.ID != "" {
					got.ID = tc.ID
				}
				got.Function.Name += tc.Function.Name
				got.Function.Arguments += tc.Function.Arguments
			}
		}
	}
	m.Content = str(text.String())
	return m, sc.Err()
}

func run(c call) string {
	var a struct{ Path, Content, Command string }
	if err := json.Unmarshal([]byte(c.Function.Arguments), &a); err != nil {
		return "error: arguments: " + err.Error()
	}
	switch c.Function.Name {
	case "write_file":
		if err := os.MkdirAll(filepath.Dir(a.Path), 0o755); err != nil {
			return "error: " + err.Error()
		}
		if err := os.WriteFile(a.Path, []byte(a.Content), 0o644); err != nil {
			return "error: " + err.Error()
		}
		return "wrote " + a.Path
	case "read_file":
		b, err := os.ReadFile(a.Path)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(b)
	case "run_command":
		out, err := exec.Command("bash", "-c", a.Command).CombinedOutput()
		if err != nil {
			return string(out) + "\n" + err.Error()
		}
		return string(out)
	}
	return "error: unknown tool " + c.Function.Name
}
