package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/services/meter/measure"
)

// fakeOpenAI is an OpenAI-compatible Chat Completions server on loopback
// that answers a task in two turns: first a write_file call that makes
// answer.txt hold 4, then, once the request carries the tool's result, a
// plain "done". It counts the calls it answers, by the model they name.
type fakeOpenAI struct {
	srv   *httptest.Server
	calls atomic.Int64
}

func newFakeOpenAI(t *testing.T) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		f.calls.Add(1)
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answered := false
		for _, m := range req.Messages {
			answered = answered || m.Role == "tool"
		}
		msg := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"answer.txt\",\"content\":\"4\\n\"}"}}]}`
		finish := "tool_calls"
		if answered {
			msg, finish = `{"role":"assistant","content":"done: answer.txt holds 4"}`, "stop"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":%s,"finish_reason":%q}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`,
			req.Model, msg, finish)
	}))
	t.Cleanup(f.srv.Close)
	if !strings.HasPrefix(f.srv.URL, "http://127.0.0.1:") {
		t.Fatalf("the fake model is not on loopback: %s", f.srv.URL)
	}
	return f
}

// cacheSuite writes a one-case suite named name under dir whose treatment
// talks to the fake model with the given extra model settings and cache.
func cacheSuite(t *testing.T, dir, name, model, cache string, fake *fakeOpenAI) string {
	t.Helper()
	files := map[string]string{
		"a.yaml": "id: a\ninstruction: Make answer.txt hold 4.\nbudget: {steps: 4}\n" +
			"grading:\n  instruments: [{id: tests, kind: command, command: 'grep -qx 4 answer.txt'}]\n",
		name + "-t.yaml": fmt.Sprintf("id: t\nmodel: {provider: openai, %s, base_url: %q, input_price: 1000000, output_price: 1000000}\n%s",
			model, fake.srv.URL+"/v1", cache),
		name + ".yaml": fmt.Sprintf("name: %s\ncases: [{path: a.yaml}]\ntreatments: [{path: %s-t.yaml}]\ntrials: 1\n", name, name),
	}
	for file, content := range files {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, name+".yaml")
}

// runCached runs a suite on the store and returns its report and how many
// calls the fake model answered during it.
func runCached(t *testing.T, store, suite string, fake *fakeOpenAI) (measure.Report, int64) {
	t.Helper()
	before := fake.calls.Load()
	code, out, errOut := runCLI(t, "run", suite, "--store", store, "--json", "--fsync", "interval")
	var r measure.Report
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("run %s: exit %d\n%s\n%s", suite, code, out, errOut)
	}
	if len(r.Attempts) != 1 || r.Attempts[0].Outcome != measure.OutcomePassed {
		t.Fatalf("run %s: the attempt did not pass: %+v", suite, r.Attempts)
	}
	return r, fake.calls.Load() - before
}

// replies returns the model.replied facts of a suite's runs.
func replies(t *testing.T, store, suite string) []events.ModelReplied {
	t.Helper()
	code, out, errOut := runCLI(t, "tail", "--store", store, "--since", "start", "--no-follow", "--kind", "model.replied", "--json")
	if code != 0 {
		t.Fatalf("tail: %d %s", code, errOut)
	}
	var got []events.ModelReplied
	for _, text := range strings.Split(strings.TrimSpace(out), "\n") {
		var line struct {
			Fact struct {
				Suite string `json:"suite"`
				Body  struct {
					Usage  *struct{ Cost *uint64 } `json:"usage"`
					Cached *struct {
						Run  string  `json:"run"`
						Cost *uint64 `json:"cost"`
					} `json:"cached"`
				} `json:"body"`
			} `json:"fact"`
		}
		if err := json.Unmarshal([]byte(text), &line); err != nil {
			t.Fatalf("tail line %q: %v", text, err)
		}
		f := line.Fact
		if f.Suite != suite {
			continue
		}
		r := events.ModelReplied{Usage: &events.Usage{}}
		if f.Body.Usage != nil {
			r.Usage.Cost = f.Body.Usage.Cost
		}
		if c := f.Body.Cached; c != nil {
			r.Cached = &events.CachedReply{Run: c.Run, Cost: c.Cost}
		}
		got = append(got, r)
	}
	if len(got) != 2 {
		t.Fatalf("suite %s has %d model.replied facts, want 2", suite, len(got))
	}
	return got
}

// Re-running a suite with cache: {mode: read_write} makes no model call:
// every reply is recorded cached, billed zero with the original's tokens,
// the grade is the first run's, and the report counts the hits. read
// reads but never writes, off neither reads nor writes, and another model
// name or temperature misses.
func TestAResponseCacheServesARerun(t *testing.T) {
	t.Setenv("FACTLINE_OPENAI_API_KEY", "sk-test-cache")
	fake := newFakeOpenAI(t)
	store, dir := t.TempDir(), t.TempDir()
	const m1 = "name: m1, temperature: 0"
	rw, read, off := "cache: {mode: read_write}\n", "cache: {mode: read}\n", "cache: {mode: off}\n"

	// off first: it must leave nothing for read to find, and read must
	// leave nothing for read_write to find.
	if _, n := runCached(t, store, cacheSuite(t, dir, "off1", m1, off, fake), fake); n != 2 {
		t.Fatalf("off: %d model calls, want 2", n)
	}
	if _, n := runCached(t, store, cacheSuite(t, dir, "read1", m1, read, fake), fake); n != 2 {
		t.Fatalf("read after off: %d model calls, want 2 (off wrote the cache?)", n)
	}
	first, n := runCached(t, store, cacheSuite(t, dir, "rw1", m1, rw, fake), fake)
	if n != 2 {
		t.Fatalf("read_write after read: %d model calls, want 2 (read wrote the cache?)", n)
	}
	hits := cacheMetric(t, "hit")
	second, n := runCached(t, store, cacheSuite(t, dir, "rw2", m1, rw, fake), fake)
	if n != 0 {
		t.Fatalf("the re-run made %d model calls, want 0", n)
	}
	if got := cacheMetric(t, "hit") - hits; got != 2 {
		t.Fatalf("factline_model_cache_total{result=hit} grew by %v, want 2", got)
	}
	if a, b := first.Attempts[0], second.Attempts[0]; a.Outcome != b.Outcome || a.Status != b.Status || *a.Tokens != *b.Tokens {
		t.Fatalf("the re-run differs: %+v vs %+v", a, b)
	}
	if u := second.Treatments[0].Usage; u.CachedCalls != 2 || u.CachedTokens != 220 || u.Cost == nil || *u.Cost != 0 {
		t.Fatalf("the re-run's usage %+v: want 2 cached calls, 220 tokens, cost 0", u)
	}
	if u := first.Treatments[0].Usage; u.CachedCalls != 0 || u.Cost == nil || *u.Cost != 220 {
		t.Fatalf("the first run's usage %+v: want no cached call and cost 220", u)
	}
	for _, r := range replies(t, store, "rw2") {
		if r.Cached == nil || r.Cached.Run == "" || *r.Usage.Cost != 0 || r.Cached.Cost == nil || *r.Cached.Cost != 110 {
			t.Fatalf("a re-run reply: %+v, cached %+v", r, r.Cached)
		}
	}
	for _, r := range replies(t, store, "rw1") {
		if r.Cached != nil {
			t.Fatalf("a reply of the model is recorded cached: %+v", r.Cached)
		}
	}
	code, out, _ := runCLI(t, "report", "rw2", "--store", store)
	if code != 0 || !strings.Contains(out, "served from the response cache 2 calls, 220 tokens") {
		t.Fatalf("the report does not show the hits: %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "report", "rw2", "--store", store, "--by", "case")
	if code != 0 || !strings.Contains(out, "cached") {
		t.Fatalf("the report by case does not show the hits: %d\n%s", code, out)
	}

	if _, n := runCached(t, store, cacheSuite(t, dir, "read2", m1, read, fake), fake); n != 0 {
		t.Fatalf("read with a filled cache: %d model calls, want 0", n)
	}
	if _, n := runCached(t, store, cacheSuite(t, dir, "off2", m1, off, fake), fake); n != 2 {
		t.Fatalf("off with a filled cache: %d model calls, want 2", n)
	}
	if _, n := runCached(t, store, cacheSuite(t, dir, "name", "name: m2, temperature: 0", rw, fake), fake); n != 2 {
		t.Fatalf("another model name: %d model calls, want 2", n)
	}
	if _, n := runCached(t, store, cacheSuite(t, dir, "temp", "name: m1, temperature: 1", rw, fake), fake); n != 2 {
		t.Fatalf("another temperature: %d model calls, want 2", n)
	}

	// Every entry now points at a foreign blob: an entry of another
	// request. A run must call the model, not take the foreign reply.
	corruptCache(t, store)
	refused := cacheMetric(t, "refused")
	if _, n := runCached(t, store, cacheSuite(t, dir, "rw3", m1, rw, fake), fake); n != 2 {
		t.Fatalf("with foreign entries: %d model calls, want 2", n)
	}
	if got := cacheMetric(t, "refused") - refused; got != 2 {
		t.Fatalf("factline_model_cache_total{result=refused} grew by %v, want 2", got)
	}
	for _, r := range replies(t, store, "rw3") {
		if r.Cached != nil {
			t.Fatalf("a foreign entry was served: %+v", r.Cached)
		}
	}
}

// cacheMetric is factline_model_cache_total of one result, over providers.
func cacheMetric(t *testing.T, result string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "factline_model_cache_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// corruptCache makes every response cache entry point at the blob of
// another one (a real entry, of another request), and one at bytes that
// are no entry at all.
func corruptCache(t *testing.T, store string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, kv, closeStore := openResponseCache(ctx, t, store)
	defer closeStore()
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names, values []string
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		names, values = append(names, k), append(values, string(e.Value()))
	}
	if len(names) < 2 {
		t.Fatalf("the cache holds %d entries, want at least 2", len(names))
	}
	junk, err := b.Blobs().Put(ctx, []byte("not a cache entry"))
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range names {
		v := values[(i+1)%len(values)]
		if i == 0 {
			v = string(junk)
		}
		if _, err := kv.Put(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
}

// A cache entry rewritten on the bus (a new blob under the same key, as
// a connection with the runner role may write both) serves nothing: a hit
// is taken only when the reply it serves is the one the log committed at
// the turn the entry cites. The model answers instead, the lookup counts
// as refused, and the run records the model's reply.
func TestAForgedCacheEntryIsNotServed(t *testing.T) {
	t.Setenv("FACTLINE_OPENAI_API_KEY", "sk-test-cache")
	fake := newFakeOpenAI(t)
	store, dir := t.TempDir(), t.TempDir()
	const m1 = "name: m1, temperature: 0"
	rw := "cache: {mode: read_write}\n"
	if _, n := runCached(t, store, cacheSuite(t, dir, "first", m1, rw, fake), fake); n != 2 {
		t.Fatalf("the first run: %d model calls, want 2", n)
	}
	forgeCacheText(t, store, "done: answer.txt holds 4", "done: answer.txt holds 42")
	hits, refused := cacheMetric(t, "hit"), cacheMetric(t, "refused")
	if _, n := runCached(t, store, cacheSuite(t, dir, "again", m1, rw, fake), fake); n != 1 {
		t.Fatalf("with one forged entry: %d model calls, want 1 (the forged reply was served?)", n)
	}
	if got := cacheMetric(t, "refused") - refused; got != 1 {
		t.Fatalf("factline_model_cache_total{result=refused} grew by %v, want 1", got)
	}
	if got := cacheMetric(t, "hit") - hits; got != 1 {
		t.Fatalf("factline_model_cache_total{result=hit} grew by %v, want 1 (the honest entry)", got)
	}
	code, out, errOut := runCLI(t, "tail", "--store", store, "--since", "start", "--no-follow", "--kind", "model.replied", "--json")
	if code != 0 {
		t.Fatalf("tail: %d %s", code, errOut)
	}
	if strings.Contains(out, "holds 42") {
		t.Fatalf("the forged reply reached the log:\n%s", out)
	}
	cached := 0
	for _, r := range replies(t, store, "again") {
		if r.Cached != nil {
			cached++
		}
	}
	if cached != 1 {
		t.Fatalf("%d of the re-run's replies are recorded cached, want 1", cached)
	}
	// The refused entry was replaced by the model's reply: a third run is
	// served both turns from the log's own replies.
	if _, n := runCached(t, store, cacheSuite(t, dir, "third", m1, rw, fake), fake); n != 0 {
		t.Fatalf("after the entry was replaced: %d model calls, want 0", n)
	}
	if code, out, _ := runCLI(t, "audit", "--store", store, "--finished"); code != 0 {
		t.Fatalf("the audit of the honest runs: exit %d\n%s", code, out)
	}
}

// forgeCacheText rewrites every response cache entry whose reply text is
// from: a new entry blob, whole and naming the same identity and request,
// with the reply text to, and the key pointed at it, the way a client of
// the bus with the runner's rights can.
func forgeCacheText(t *testing.T, store, from, to string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, kv, closeStore := openResponseCache(ctx, t, store)
	defer closeStore()
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	forged := 0
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		data, err := b.Blobs().Get(ctx, events.Digest(e.Value()))
		if err != nil {
			t.Fatal(err)
		}
		var entry map[string]any
		if err := json.Unmarshal(data, &entry); err != nil {
			t.Fatal(err)
		}
		reply, _ := entry["reply"].(map[string]any)
		if reply == nil || reply["text"] != from {
			continue
		}
		reply["text"] = to
		data, err = json.Marshal(entry)
		if err != nil {
			t.Fatal(err)
		}
		blob, err := b.Blobs().Put(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, k, []byte(blob)); err != nil {
			t.Fatal(err)
		}
		forged++
	}
	if forged != 1 {
		t.Fatalf("forged %d entries, want 1", forged)
	}
}

// openResponseCache starts the store's server (no other process may hold
// it), and returns a bus on it, its response cache bucket as a client with
// the runner's rights sees it, and what shuts both down.
func openResponseCache(ctx context.Context, t *testing.T, store string) (*bus.Bus, jetstream.KeyValue, func()) {
	t.Helper()
	b, done := openStoreBus(ctx, t, store)
	kv, err := b.JetStream().KeyValue(ctx, bus.CacheBucket)
	if err != nil {
		done()
		t.Fatal(err)
	}
	return b, kv, done
}
