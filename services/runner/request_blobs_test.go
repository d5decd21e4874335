package runner_test

import (
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// Each turn's request is stored as what the turn added to the one before
// (a delta), so a run's request blobs cost about the same per turn at turn
// 50 as at turn 5, not the whole history again; and every turn.started
// digest still resolves to the exact bytes it names. Before requests were
// stored as deltas every turn stored its whole request, and the stored
// sizes grew with the turn.
func TestRequestBlobsStayFlatInRunLength(t *testing.T) {
	t.Parallel()
	const turns = 60
	e := start(t)
	var turnsYAML []string
	for range turns - 1 {
		turnsYAML = append(turnsYAML, "  - calls: [{name: read_file, args: {path: answer.txt}}]\n")
	}
	turnsYAML = append(turnsYAML, "  - text: done\n")
	log, end := e.run(fixtureCase(t, "{steps: 70}"), script(turnsYAML...), "long-requests")
	if end.Status == events.RunErrored {
		t.Fatalf("run ended %s: %s", end.Status, end.Reason)
	}
	started := kinds(log, events.KindTurnStarted)
	if len(started) != turns {
		t.Fatalf("%d turns started, want %d", len(started), turns)
	}
	type turnBlob struct {
		size   int // the whole request
		stored bus.BlobStored
	}
	blobs := make([]turnBlob, turns)
	wholes := 0
	for i, f := range started {
		d := f.Body.(events.TurnStarted).ContextDigest
		body, err := e.b.Blobs().Get(e.ctx, d)
		if err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		if got := events.DigestOf(body); got != d {
			t.Fatalf("turn %d: turn.started names %s, its blob reads as %s", i+1, d, got)
		}
		st, err := e.b.Blobs().Stat(e.ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		blobs[i] = turnBlob{size: len(body), stored: st}
		if st.Depth == 0 {
			wholes++
			continue
		}
		// A delta holds what the turn added and a base's name.
		if added := len(body) - blobs[i-1].size; st.Size > uint64(added+128) {
			t.Errorf("turn %d: %d bytes stored for a request that grew by %d", i+1, st.Size, added)
		}
	}
	// Whole requests: the first, then one each time the chain is as deep
	// as a read may follow.
	if max := (turns + bus.MaxDeltaDepth) / (bus.MaxDeltaDepth + 1); wholes > max {
		t.Errorf("%d of %d requests stored whole, want at most %d", wholes, turns, max)
	}
	mean := func(from, to int) float64 {
		sum, n := 0.0, 0
		for _, b := range blobs[from-1 : to] {
			if b.stored.Depth > 0 {
				sum += float64(b.stored.Size)
				n++
			}
		}
		if n == 0 {
			t.Fatalf("no delta among turns %d-%d", from, to)
		}
		return sum / float64(n)
	}
	early, late := mean(2, 11), mean(41, 50)
	if late > 1.2*early {
		t.Errorf("stored bytes per turn grow with the run: %.0f a turn in turns 41-50, %.0f in turns 2-11", late, early)
	}
	if whole := blobs[turns-1].size; late*4 > float64(whole) {
		t.Errorf("a late turn stores %.0f bytes of a %d-byte request: not what is new", late, whole)
	}
	t.Logf("stored bytes a turn: %.0f (turns 2-11), %.0f (turns 41-50); the last request is %d bytes; %d stored whole",
		early, late, blobs[turns-1].size, wholes)
}
