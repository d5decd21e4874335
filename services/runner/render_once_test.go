package runner_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// countingModel counts the requests its model renders.
type countingModel struct {
	models.Model
	renders *atomic.Int32
}

func (m countingModel) Exhausted(turn int) bool {
	ex, ok := m.Model.(interface{ Exhausted(int) bool })
	return ok && ex.Exhausted(turn)
}

func (m countingModel) Render(req models.Request) ([]byte, error) {
	m.renders.Add(1)
	return m.Model.Render(req)
}

// A runner that starts a turn sends the request it rendered for the
// turn's turn.started: the history, whose rendering grows with the run,
// is rendered once a turn, not again before the model is asked (only a
// runner that took the run over rebuilds it, and checks it against the
// committed digest).
func TestATurnsRequestIsRenderedOnce(t *testing.T) {
	t.Parallel()
	var renders atomic.Int32
	e, _ := startWith(t, runner.WithModels(func(ctx context.Context, c *cases.Case, tr *cases.Treatment) (models.Model, error) {
		m, err := runner.Models(ctx, c, tr)
		if err != nil {
			return nil, err
		}
		return countingModel{Model: m, renders: &renders}, nil
	}))
	log, end := e.run(fixtureCase(t, "{steps: 6}"), script(
		"  - calls: [{name: read_file, args: {path: answer.txt}}]\n",
		"  - calls: [{name: read_file, args: {path: answer.txt}}]\n",
		"  - text: done\n"), "render-once")
	if end.Status == events.RunErrored {
		t.Fatalf("run ended %s: %s", end.Status, end.Reason)
	}
	started := kinds(log, events.KindTurnStarted)
	if len(started) != 3 {
		t.Fatalf("%d turns started, want 3", len(started))
	}
	if n := renders.Load(); n != int32(len(started)) {
		t.Fatalf("%d requests rendered for %d turns, want one each", n, len(started))
	}
}

// blobLosingModel fails its first call of turn 2 after deleting that
// turn's request blob: as if the runner that started the turn died after
// committing turn.started and before its request was stored (it stores
// the request while it commits turn.started and asks the model).
type blobLosingModel struct {
	models.Model
	b      *bus.Bus
	failed *atomic.Bool
}

func (m blobLosingModel) Exhausted(turn int) bool {
	ex, ok := m.Model.(interface{ Exhausted(int) bool })
	return ok && ex.Exhausted(turn)
}

func (m blobLosingModel) Complete(ctx context.Context, req models.Request) (models.Reply, error) {
	if req.Turn == 2 && m.failed.CompareAndSwap(false, true) {
		body, err := m.Model.Render(req)
		if err != nil {
			return models.Reply{}, err
		}
		d := events.DigestOf(body)
		for {
			// The runner stores the request while the model is asked.
			if _, err := m.b.Blobs().Stat(ctx, d); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return models.Reply{}, ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
		obs, err := m.b.JetStream().ObjectStore(ctx, bus.BlobBucket)
		if err != nil {
			return models.Reply{}, err
		}
		if err := obs.Delete(ctx, d.Hex()); err != nil {
			return models.Reply{}, err
		}
		// As the bus failing under the run: the run is resumed from the
		// log, as a runner taking it over would.
		return models.Reply{}, fmt.Errorf("the runner died before its request was stored: %w", nats.ErrTimeout)
	}
	return m.Model.Complete(ctx, req)
}

// A turn's reply is committed only once its request is stored, and a
// runner that takes over a started turn whose request is missing stores it
// before asking: every turn.started digest of a run resolves to its bytes.
func TestATakenOverTurnStoresItsMissingRequest(t *testing.T) {
	t.Parallel()
	var failed atomic.Bool
	var b *bus.Bus
	e := startTuned(t, func(bb *bus.Bus) []kit.Option {
		b = bb
		return []kit.Option{runner.WithModels(func(ctx context.Context, c *cases.Case, tr *cases.Treatment) (models.Model, error) {
			m, err := runner.Models(ctx, c, tr)
			if err != nil {
				return nil, err
			}
			return blobLosingModel{Model: m, b: b, failed: &failed}, nil
		})}
	}, nil)
	log, end := e.run(fixtureCase(t, "{steps: 6}"), script(
		"  - calls: [{name: read_file, args: {path: answer.txt}}]\n",
		"  - calls: [{name: read_file, args: {path: answer.txt}}]\n",
		"  - text: done\n"), "lost-request")
	if end.Status == events.RunErrored {
		t.Fatalf("run ended %s: %s", end.Status, end.Reason)
	}
	if !failed.Load() {
		t.Fatal("the model never lost turn 2's request")
	}
	for _, f := range kinds(log, events.KindTurnStarted) {
		d := f.Body.(events.TurnStarted).ContextDigest
		body, err := e.b.Blobs().Get(e.ctx, d)
		if err != nil {
			t.Errorf("turn %d: request %s: %v", f.Body.(events.TurnStarted).Turn, d, err)
			continue
		}
		if events.DigestOf(body) != d {
			t.Errorf("turn %d: the stored request is not the one named", f.Body.(events.TurnStarted).Turn)
		}
	}
}
