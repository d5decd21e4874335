package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/models"
	"github.com/factline/factline/sandbox/sandboxtest"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

func reachableDir(t *testing.T) string { return sandboxtest.ReachableDir(t) }

// agentDir is a fresh directory for a test's agent files that the
// attempt's user can reach: below /usr/local/lib, not below root's 0700
// home or the attempt's private /tmp. It is removed when the test ends.
func agentDir(t *testing.T, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/usr/local/lib", prefix)
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	return dir
}

// startWith starts a runner configured by opts and a stand-in decider on
// a real embedded server; the runner logs to the returned buffer, which a
// failed test prints.
func startWith(t *testing.T, opts ...kit.Option) (*env, *testutil.LogBuffer) {
	t.Helper()
	b, _ := bustest.Start(t)
	// Only a failure waits this long: a container run under a loaded
	// -race test binary spends tens of seconds in podman alone (one ended
	// its 20 s wall budget at 34 s, and its test then ran out of 2 min).
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	logs := &testutil.LogBuffer{}
	work := reachableDir(t)
	svc, err := runner.New(b, append([]kit.Option{runner.WithWorkDir(work), kit.WithWorkers(1), runner.WithDecisionTimeout(time.Minute),
		kit.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))}, opts...)...)
	must(t, err)
	done := make(chan struct{}, 2)
	go func() { _ = svc.Run(ctx); done <- struct{}{} }()
	go func() { _ = fleettest.Decider{Bus: b}.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	return &env{t: t, b: b, ctx: ctx, work: work}, logs
}

// leakyModel plays a script but puts a secret where the script says
// @@SECRET@@ (in text and call arguments), and fails with an error that
// quotes the secret where the script's text is @@FAIL@@: a model that
// repeats a key it saw, and a provider whose error echoes it.
type leakyModel struct {
	models.Model
	secret string
}

func (m leakyModel) Exhausted(turn int) bool {
	ex, ok := m.Model.(interface{ Exhausted(int) bool })
	return ok && ex.Exhausted(turn)
}

func (m leakyModel) Complete(ctx context.Context, req models.Request) (models.Reply, error) {
	r, err := m.Model.Complete(ctx, req)
	if err != nil {
		return r, err
	}
	if r.Text == "@@FAIL@@" {
		return models.Reply{}, &models.Error{Kind: models.ErrBadRequest, Provider: "leaky", Status: 401,
			Err: errorString("invalid api key " + m.secret)}
	}
	r.Text = strings.ReplaceAll(r.Text, "@@SECRET@@", m.secret)
	calls := append([]models.ToolCall(nil), r.Calls...)
	for i := range calls {
		calls[i].Args = strings.ReplaceAll(calls[i].Args, "@@SECRET@@", m.secret)
	}
	r.Calls = calls
	return r, nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

// leakyModels builds the treatment's scripted model wrapped in leakyModel.
func leakyModels(secret string) runner.ModelFactory {
	return func(ctx context.Context, c *cases.Case, t *cases.Treatment) (models.Model, error) {
		m, err := runner.Models(ctx, c, t)
		if err != nil {
			return nil, err
		}
		return leakyModel{Model: m, secret: secret}, nil
	}
}

// scanAll returns every stored message of every stream on the server
// (FACTS, the blob bucket's chunks, CONTROL, the KV buckets) and every
// blob reassembled, as raw bytes.
func scanAll(t *testing.T, ctx context.Context, b *bus.Bus) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	js := b.JetStream()
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		s, err := js.Stream(ctx, name)
		must(t, err)
		info, err := s.Info(ctx)
		must(t, err)
		for seq := info.State.FirstSeq; seq > 0 && seq <= info.State.LastSeq; seq++ {
			m, err := s.GetMsg(ctx, seq)
			if err != nil {
				continue // deleted or expired
			}
			var hdr bytes.Buffer
			for k, vs := range m.Header {
				hdr.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
			}
			out[name+"/"+m.Subject+"#"+strconv.FormatUint(seq, 10)] = append(append(hdr.Bytes(), m.Subject...), m.Data...)
		}
	}
	must(t, names.Err())
	obs, err := js.ObjectStore(ctx, bus.BlobBucket)
	must(t, err)
	list, err := obs.List(ctx)
	must(t, err)
	for _, o := range list {
		data, err := obs.GetBytes(ctx, o.Name)
		must(t, err)
		out["blob/"+o.Name] = data
	}
	return out
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// claimedContainment is the containment record a run.claimed of the log
// names (its blob, fetched through the bus, or the record itself).
func (e *env) claimedContainment(f events.Fact) *events.Containment {
	e.t.Helper()
	rec, err := e.b.Blobs().ClaimedContainment(e.ctx, f.Body.(events.RunClaimed))
	if err != nil {
		e.t.Fatalf("the claim's containment: %v", err)
	}
	return rec
}
