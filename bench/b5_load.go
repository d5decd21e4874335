package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/factline/factline/bus"
)

// loadResult is one repetition of B5.
type loadResult struct {
	loadP50, loadP99 time.Duration // bus.LoadRun of one 50-fact run
	getP50, getP99   time.Duration // one direct get of one message
}

// benchLoad loads one run of fillRunLen facts from the filled stream, n
// times, alternating with direct gets of single messages at random
// sequences of the same stream.
func benchLoad(ctx context.Context, b *bus.Bus, runs, n int) (loadResult, error) {
	run := fillRun(runs / 2)
	api := "$JS.API.DIRECT.GET." + bus.FactsStream
	info, err := b.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		return loadResult{}, err
	}
	last := info.CachedInfo().State.LastSeq
	loads := make([]time.Duration, 0, n)
	gets := make([]time.Duration, 0, n)
	for i := range n {
		t0 := time.Now()
		log, err := b.LoadRun(ctx, fillSuite, run)
		loads = append(loads, time.Since(t0))
		if err != nil {
			return loadResult{}, err
		}
		if len(log.Records) != fillRunLen {
			return loadResult{}, fmt.Errorf("LoadRun %s: %d facts, want %d", run, len(log.Records), fillRunLen)
		}
		req, _ := json.Marshal(map[string]uint64{"seq": 1 + rand.Uint64N(last)})
		t0 = time.Now()
		m, err := b.Conn().RequestWithContext(ctx, api, req)
		gets = append(gets, time.Since(t0))
		if err != nil {
			return loadResult{}, fmt.Errorf("direct get %d: %w", i, err)
		}
		if st := m.Header.Get("Status"); st != "" {
			return loadResult{}, fmt.Errorf("direct get: status %s", st)
		}
	}
	return loadResult{loadP50: percentile(loads, 50), loadP99: percentile(loads, 99),
		getP50: percentile(gets, 50), getP99: percentile(gets, 99)}, nil
}
