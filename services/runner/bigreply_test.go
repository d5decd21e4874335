package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// turnServer is a Chat Completions endpoint on 127.0.0.1 that answers a
// request by its turn, counted as the assistant messages the request
// holds: replies[0] opens a run, each later turn gets the next reply (the
// last once they run out), whichever runner asks and however often. It
// records every body it received, in order.
type turnServer struct {
	srv *httptest.Server
	mu  sync.Mutex
	got [][]byte
}

func newTurnServer(t *testing.T, replies ...string) *turnServer {
	t.Helper()
	s := &turnServer{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.Unmarshal(body, &req) != nil {
			http.Error(w, `{"error":{"message":"no route or no JSON"}}`, http.StatusBadRequest)
			return
		}
		turn := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				turn++
			}
		}
		s.mu.Lock()
		s.got = append(s.got, body)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, replies[min(turn, len(replies)-1)])
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *turnServer) received() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.got...)
}

// chatText is a Chat Completions reply with text and calls, each a name
// and its arguments' JSON text.
func chatText(text string, calls ...[2]string) string {
	var tc []map[string]any
	for i, c := range calls {
		tc = append(tc, map[string]any{"id": fmt.Sprintf("c%d", i+1), "type": "function",
			"function": map[string]string{"name": c[0], "arguments": c[1]}})
	}
	b, _ := json.Marshal(map[string]any{"id": "r", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls",
			"message": map[string]any{"role": "assistant", "content": text, "tool_calls": tc}}},
		"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 2}})
	return string(b)
}

// bigText is n bytes of prose-like text, so that nothing in the path can
// shrink it by noticing one repeated byte.
func bigText(n int) string {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "line %d of a very long answer. ", i)
	}
	return sb.String()[:n]
}

// payload is the bus connection's real limit on one message.
func (e *env) payload() int { return int(e.b.Conn().MaxPayload()) }

// replied is the run's model.replied of a turn.
func replied(t *testing.T, log bus.RunLog, turn uint32) events.ModelReplied {
	t.Helper()
	for _, f := range kinds(log, events.KindModelReplied) {
		if r := f.Body.(events.ModelReplied); r.Turn == turn {
			return r
		}
	}
	t.Fatalf("no model.replied for turn %d", turn)
	return events.ModelReplied{}
}

var (
	writeAnswer = [2]string{"write_file", `{"path":"answer.txt","content":"4\n"}`}
	runCheck    = [2]string{"run_command", `{"command":"./check.sh"}`}
)

func finishDone(evidence string) [2]string {
	return [2]string{"task_complete", fmt.Sprintf(`{"status":"done","evidence":[%q]}`, evidence)}
}

// A reply whose text is larger than the bus takes in one message ended
// the run as a harness error ("nats: maximum payload exceeded" committing
// model.replied). The text goes to a blob the fact names by digest, the
// run goes on to done, and the next turn's request carries the text as
// the model wrote it.
func TestAReplyLargerThanTheBusPayloadGoesToABlob(t *testing.T) {
	t.Parallel()
	e := start(t)
	text := bigText(e.payload() * 3 / 2)
	srv := newTurnServer(t, chatText(text, writeAnswer, runCheck), chatText("done", finishDone("t1/c2")))
	log, end := e.runNative("openai", srv.srv.URL+"/v1", "{steps: 4}", "big-text")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s (%s), want done: a large reply is no harness error", end.Status, end.Reason)
	}
	r := replied(t, log, 1)
	if r.Text != "" || r.TextDigest != events.DigestOf([]byte(text)) {
		t.Fatalf("turn 1's fact holds %d bytes of text and names %q, want the text moved to blob %s", len(r.Text), r.TextDigest, events.DigestOf([]byte(text)))
	}
	blob, err := e.b.Blobs().Get(e.ctx, r.TextDigest)
	must(t, err)
	if string(blob) != text {
		t.Fatalf("the blob holds %d bytes, not the text", len(blob))
	}
	if r2 := replied(t, log, 2); r2.Text != "done" || r2.TextDigest != "" {
		t.Errorf("a small reply was moved too: %+v", r2)
	}
	got := srv.received()
	e.checkRecordedBodies(log, got)
	if len(got) != 2 || !strings.Contains(string(got[1]), text) {
		t.Fatal("turn 2's request does not carry turn 1's text")
	}
}

// A call whose arguments are larger than the bus takes (write_file with a
// huge content) ended the run as a harness error before the tool could
// check them. The arguments go to a blob named by the call's ArgsDigest,
// the call is refused as BAD_ARGUMENTS naming the tool's limit, and the
// run goes on.
func TestArgumentsLargerThanTheBusPayloadAreRefusedByTheTool(t *testing.T) {
	t.Parallel()
	e := start(t)
	content := bigText(e.payload() * 14 / 10)
	args := fmt.Sprintf(`{"path":"big.txt","content":%q}`, content)
	srv := newTurnServer(t, chatText("", [2]string{"write_file", args}),
		chatText("", writeAnswer, runCheck), chatText("", finishDone("t2/c2")))
	log, end := e.runNative("openai", srv.srv.URL+"/v1", "{steps: 5}", "big-args")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s (%s), want done: large arguments are no harness error", end.Status, end.Reason)
	}
	c := replied(t, log, 1).Calls[0]
	if c.Args != "" || c.ArgsDigest != events.DigestOf([]byte(args)) {
		t.Fatalf("the call's fact holds %d bytes of arguments and names %s, want them moved to blob %s", len(c.Args), c.ArgsDigest, events.DigestOf([]byte(args)))
	}
	blob, err := e.b.Blobs().Get(e.ctx, c.ArgsDigest)
	must(t, err)
	if string(blob) != args {
		t.Fatalf("the blob holds %d bytes, not the arguments", len(blob))
	}
	bad := dispatches(log)["t1/c1"]
	if bad.Error == nil || bad.Error.Code != "BAD_ARGUMENTS" || bad.Dispatch.Mutation != events.MutationNotApplied {
		t.Fatalf("the huge call: %+v, want BAD_ARGUMENTS, not applied", bad)
	}
	if !strings.Contains(bad.Error.Message, "1,048,576") {
		t.Errorf("the observation does not name the limit: %.300q", bad.Error.Message)
	}
	got := srv.received()
	e.checkRecordedBodies(log, got)
	if len(got) != 3 || !strings.Contains(string(got[1]), content) {
		t.Fatal("turn 2's request does not carry turn 1's call as the model sent it")
	}
}

// Text and arguments that each fit the tool and the bus but together do
// not fit one fact: the largest part goes to a blob, the call runs.
func TestAReplyTooLargeOnlyAsAWholeRunsItsCall(t *testing.T) {
	t.Parallel()
	e := start(t)
	text := bigText(e.payload() * 6 / 10)
	content := bigText(min(e.payload()*6/10, 1<<20-64))
	args := fmt.Sprintf(`{"path":"big.txt","content":%q}`, content)
	srv := newTurnServer(t, chatText(text, [2]string{"write_file", args}, writeAnswer, runCheck),
		chatText("", finishDone("t1/c3")))
	log, end := e.runNative("openai", srv.srv.URL+"/v1", "{steps: 4}", "big-both")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s (%s), want done", end.Status, end.Reason)
	}
	r := replied(t, log, 1)
	if r.TextDigest == "" && r.Calls[0].Args != "" {
		t.Fatal("neither the text nor the arguments were moved to a blob")
	}
	if d := dispatches(log)["t1/c1"]; d.Error != nil || d.Dispatch.Mutation != events.MutationApplied {
		t.Fatalf("the large write: %+v, want applied", d)
	}
	e.checkRecordedBodies(log, srv.received())
}

// runNativeWith is runNative with more lines in the treatment (a cache).
func (e *env) runNativeWith(baseURL, extra, budget, run string) (bus.RunLog, events.RunEnded) {
	e.t.Helper()
	tr, err := cases.ParseTreatment("t.yaml", []byte(fmt.Sprintf("id: native\nmodel: {provider: openai, name: native-test, base_url: %q, input_price: 1000000, output_price: 2000000}\n%s", baseURL, extra)))
	must(e.t, err)
	p, err := fleettest.Publish(e.ctx, e.b, fixtureCase(e.t, budget), tr)
	must(e.t, err)
	must(e.t, fleettest.Request(e.ctx, e.b, "suite", run, p, 1))
	log, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", run)
	must(e.t, err)
	return log, end
}

// A reply kept in a blob is served from the response cache like any
// other: the hit is checked against the original fact (its text by
// digest), recorded cached, and names the same blob.
func TestACachedReplyWithItsTextInABlob(t *testing.T) {
	t.Parallel()
	e := start(t)
	text := bigText(e.payload() * 3 / 2)
	srv := newTurnServer(t, chatText(text, writeAnswer, runCheck), chatText("done", finishDone("t1/c2")))
	const cache = "cache: {mode: read_write}\n"
	_, first := e.runNativeWith(srv.srv.URL+"/v1", cache, "{steps: 4}", "cache-1")
	calls := len(srv.received())
	log, end := e.runNativeWith(srv.srv.URL+"/v1", cache, "{steps: 4}", "cache-2")
	if first.Status != events.RunDone || end.Status != events.RunDone {
		t.Fatalf("ended %s (%s) and %s (%s), want done twice", first.Status, first.Reason, end.Status, end.Reason)
	}
	if n := len(srv.received()) - calls; n != 0 {
		t.Fatalf("the second run called the model %d times, want every reply from the cache", n)
	}
	r := replied(t, log, 1)
	if r.Cached == nil || r.Text != "" || r.TextDigest != events.DigestOf([]byte(text)) {
		t.Fatalf("the cached reply: cached %+v, %d bytes of text, digest %q", r.Cached, len(r.Text), r.TextDigest)
	}
}

// A runner that dies after committing a reply kept in a blob, or after
// starting the next turn, is replaced by one that rebuilds the history
// from the facts and the blob: the requests are the ones an uninterrupted
// run sends (the heir checks its rebuilt request against the committed
// digest, and errs if they differ).
func TestTakeoverRebuildsAHistoryWithABlobReply(t *testing.T) {
	t.Parallel()
	b, _ := bustest.StartWith(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	go func() { _ = fleettest.Decider{Bus: b}.Run(ctx) }()
	text := bigText(int(b.Conn().MaxPayload()) * 3 / 2)
	srv := newTurnServer(t, chatText(text, writeAnswer, runCheck), chatText("done", finishDone("t1/c2")))
	tr, err := cases.ParseTreatment("t.yaml", []byte(fmt.Sprintf("id: native\nmodel: {provider: openai, name: native-test, base_url: %q}\n", srv.srv.URL+"/v1")))
	must(t, err)
	p, err := fleettest.Publish(ctx, b, fixtureCase(t, "{steps: 4}"), tr)
	must(t, err)
	ref := takeover(t, ctx, b, "blob-ref", p, nil)
	want := outcomeOf(t, ref.log, ref.end)
	if want.status != events.RunDone {
		t.Fatalf("reference run: %+v", want)
	}
	// The crash points: right after turn 1's reply, and right after turn
	// 2 started (its request must then be rebuilt byte for byte).
	var points []int
	n := 0
	for _, f := range ref.log.Facts() {
		if f.Producer.Service != events.OwnerRunner {
			continue
		}
		n++
		switch b := f.Body.(type) {
		case events.ModelReplied:
			if b.Turn == 1 {
				points = append(points, n)
			}
		case events.TurnStarted:
			if b.Turn == 2 {
				points = append(points, n)
			}
		}
	}
	if len(points) != 2 {
		t.Fatalf("crash points %v", points)
	}
	for _, crashAt := range points {
		t.Run(fmt.Sprintf("after commit %d", crashAt), func(t *testing.T) {
			t.Parallel()
			b, natsd := bustest.StartWith(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
			dctx, stopDecider := context.WithCancel(ctx)
			t.Cleanup(stopDecider)
			go func() { _ = fleettest.Decider{Bus: b}.Run(dctx) }()
			p, err := fleettest.Publish(ctx, b, fixtureCase(t, "{steps: 4}"), tr)
			must(t, err)
			run := fmt.Sprintf("blob-crash%d", crashAt)
			child := exec.Command(os.Args[0])
			child.Env = append(os.Environ(), "FACTLINE_TEST_RUNNER="+natsd.ClientURL(),
				"FACTLINE_TEST_CRASH_AT="+strconv.Itoa(crashAt), "FACTLINE_TEST_WORKDIR="+t.TempDir())
			must(t, child.Start())
			res := takeover(t, ctx, b, run, p, child)
			got := outcomeOf(t, res.log, res.end)
			if got.status != want.status || got.steps != want.steps || got.snapshot != want.snapshot ||
				got.calls != want.calls || fmt.Sprint(got.requests) != fmt.Sprint(want.requests) {
				t.Fatalf("after a crash at commit %d:\n got %+v\nwant %+v", crashAt, got, want)
			}
			if r := replied(t, res.log, 1); r.TextDigest != events.DigestOf([]byte(text)) {
				t.Fatalf("turn 1's reply names %q", r.TextDigest)
			}
			started := kinds(res.log, events.KindTurnStarted)
			if len(started) != 2 {
				t.Fatalf("%d turns started, want 2", len(started))
			}
			sent, err := b.Blobs().Get(ctx, started[1].Body.(events.TurnStarted).ContextDigest)
			must(t, err)
			if !strings.Contains(string(sent), text) {
				t.Fatal("turn 2's request does not carry turn 1's text")
			}
		})
	}
}

// A child run whose answer is a text kept in a blob answers its parent
// with that text (cut as any long answer is), not with nothing.
func TestAChildsAnswerKeptInABlobReachesItsParent(t *testing.T) {
	t.Parallel()
	e := start(t)
	text := bigText(e.payload() * 3 / 2)
	child := fmt.Sprintf(`turns:
  - text: %q
    usage: {input_tokens: 60, output_tokens: 6, cost: 2}
    reserve: 2
`, text)
	parent := `turns:
  - calls:
      - {id: ask, name: delegate, args: {instruction: "Say a lot.", budget: {steps: 3, cost: 20}}}
    usage: {input_tokens: 100, output_tokens: 10, cost: 2}
    reserve: 3
  - text: the child said a lot
    usage: {input_tokens: 120, output_tokens: 12, cost: 3}
    reserve: 3
`
	e.startDelegating(fixtureCase(t, "{steps: 6, cost: 60}"), parent, child, "bp")
	log, end := e.wait("bp")
	clog, cend := e.wait("bp-d1-ask")
	if end.Status != events.RunDone || cend.Status != events.RunDone {
		t.Fatalf("parent %s/%q, child %s/%q", end.Status, end.Reason, cend.Status, cend.Reason)
	}
	if r := replied(t, clog, 1); r.Text != "" || r.TextDigest != events.DigestOf([]byte(text)) {
		t.Fatalf("the child's reply holds %d bytes and names %q: want its text in a blob", len(r.Text), r.TextDigest)
	}
	c := settledDelegation(t, log).Child
	if c == nil || !strings.HasPrefix(c.Answer, text[:1000]) {
		t.Fatalf("the child's answer reached the parent as %+v", c)
	}
}

// The limit is the connected server's, not a size fixed in the runner: on
// a server that takes at most 256 KiB a message, a 300 KB text (which
// the default 1 MiB would take) goes to a blob, and a 100 KB one stays in
// the fact.
func TestTheReplyLimitIsTheServers(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "nats.conf")
	must(t, os.WriteFile(conf, []byte("max_payload: 262144\n"), 0o644))
	b, _ := bustest.StartWith(t, bus.EmbeddedConfig{ConfigFile: conf})
	if got := b.Conn().MaxPayload(); got != 262144 {
		t.Fatalf("the server takes %d bytes a message, want 262144", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	svc, err := runner.New(b, runner.WithWorkDir(t.TempDir()), kit.WithWorkers(2), runner.WithDecisionTimeout(time.Minute))
	must(t, err)
	done := make(chan struct{}, 2)
	go func() { _ = svc.Run(ctx); done <- struct{}{} }()
	go func() { _ = fleettest.Decider{Bus: b}.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	e := &env{t: t, b: b, ctx: ctx}
	large, small := bigText(300_000), bigText(100_000)
	srv := newTurnServer(t, chatText(large, writeAnswer, runCheck), chatText(small, finishDone("t1/c2")))
	log, end := e.runNative("openai", srv.srv.URL+"/v1", "{steps: 4}", "small-server")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s (%s), want done", end.Status, end.Reason)
	}
	if r := replied(t, log, 1); r.Text != "" || r.TextDigest != events.DigestOf([]byte(large)) {
		t.Fatalf("the 300 KB text: %d bytes in the fact, digest %q; want it in a blob", len(r.Text), r.TextDigest)
	}
	if r := replied(t, log, 2); r.Text != small || r.TextDigest != "" {
		t.Fatalf("the 100 KB text was moved (%d bytes in the fact, digest %q)", len(r.Text), r.TextDigest)
	}
	e.checkRecordedBodies(log, srv.received())
}

// A summary larger than one bus message ended the run as a harness error
// committing context.summarised. It condenses nothing a context can
// carry: the run ends exhausted on its context budget, saying why.
func TestASummaryLargerThanAFactExhaustsTheContextBudget(t *testing.T) {
	t.Parallel()
	e := start(t)
	log, end := e.runUnder(fixtureCase(t, "{steps: 6, cost: 30}"), withContext(t, summarisePolicy, codeScript(bigText(e.payload()*3/2))), "big-summary")
	if end.Status != events.RunExhausted || !strings.HasPrefix(end.Reason, "context_budget: the summary of turns 1-1 is") ||
		!strings.Contains(end.Reason, "more than a fact holds") {
		t.Fatalf("ended %s (%s), want exhausted on the context budget naming the summary's size", end.Status, end.Reason)
	}
	if n := len(kinds(log, events.KindContextSummarised)); n != 0 {
		t.Fatalf("%d summaries committed", n)
	}
}

// A provider's answer past the bound on a reply body ends the call as a
// bad response naming the bound: the run ends on a model error, not as a
// harness error, and nothing of the answer is committed.
func TestAnAnswerPastTheBodyBoundIsAModelError(t *testing.T) {
	t.Parallel()
	e := start(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // no Content-Length: the bound is found while reading
		_, _ = io.WriteString(w, `{"id":"r","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`)
		chunk := strings.Repeat("endless ", 8192)
		for sent := 0; sent <= 33<<20; sent += len(chunk) {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `"}}]}`)
	}))
	t.Cleanup(srv.Close)
	log, end := e.runNative("openai", srv.URL+"/v1", "{steps: 4}", "endless")
	if end.Status != events.RunErrored || !strings.HasPrefix(end.Reason, "model_error: ") || !strings.Contains(end.Reason, "33554432-byte limit") {
		t.Fatalf("ended %s (%s), want a model error naming the bound", end.Status, end.Reason)
	}
	if n := len(kinds(log, events.KindModelReplied)); n != 0 {
		t.Fatalf("%d replies committed", n)
	}
}
