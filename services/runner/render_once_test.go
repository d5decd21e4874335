package runner_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
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
