// Package recorded loads recorded runs for the policy lab: the facts of a
// store, a server or an export file, grouped by run, each with the case
// and treatment it ran under. It is the lab's I/O shell; lab/whatif, which
// re-decides the runs, is pure.
package recorded

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/lab/whatif"
	"github.com/factline/factline/projections/replay"
)

// Resolver finds the case under its treatment a run.requested names.
type Resolver func(ctx context.Context, req events.RunRequested) (cases.Effective, error)

// Skipped is a run that could not be replayed, and why.
type Skipped struct {
	Suite  string `json:"suite"`
	Run    string `json:"run"`
	Reason string `json:"reason"`
}

// Result is what Load read.
type Result struct {
	Runs    []whatif.Run
	Skipped []Skipped
	// Bad are messages that hold no fact of their subject; they are left
	// out, as every reader of the log leaves them out.
	Bad []bus.BadRecord
}

// Load reads every fact of src, keeps those of the named suites (every
// suite when none is named), and returns the runs in the order the log
// first mentions them. A run whose run.requested is missing, that has not
// ended, or whose case or treatment the resolver cannot find, is skipped
// with the reason.
func Load(ctx context.Context, src replay.Source, suites []string, resolve Resolver) (Result, error) {
	type key struct{ suite, run string }
	var res Result
	var order []key
	logs := map[key]*bus.RunLog{}
	_, err := src.Each(ctx, func(raw bus.Raw) error {
		f, err := raw.Fact()
		if err != nil {
			res.Bad = append(res.Bad, bus.BadRecord{Seq: raw.Seq, Subject: raw.Subject, Err: err})
			return nil
		}
		if f.Run == events.SuiteScope || len(suites) > 0 && !slices.Contains(suites, f.Suite) {
			return nil
		}
		k := key{f.Suite, f.Run}
		log, seen := logs[k]
		if !seen {
			log = &bus.RunLog{Suite: f.Suite, Run: f.Run}
			logs[k] = log
			order = append(order, k)
		}
		log.Records = append(log.Records, bus.Record{Fact: f, Seq: raw.Seq, Subject: raw.Subject})
		log.LastSeq = raw.Seq
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("read the log: %w", err)
	}
	for _, k := range order {
		log := logs[k]
		delete(logs, k) // what each run keeps is its facts, not its records too
		req, ok := log.Requested()
		if !ok {
			res.Skipped = append(res.Skipped, Skipped{k.suite, k.run, "no run.requested: its case and stall policy are unknown"})
			continue
		}
		if !log.Ended() {
			// Its recording has no end to compare a policy's stop with:
			// replayed, it would count as decided the same.
			res.Skipped = append(res.Skipped, Skipped{k.suite, k.run, "has not ended (never started, or still running): no recorded outcome to compare"})
			continue
		}
		eff, err := resolve(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			res.Skipped = append(res.Skipped, Skipped{k.suite, k.run, err.Error()})
			continue
		}
		res.Runs = append(res.Runs, whatif.Run{Suite: k.suite, ID: k.run, Effective: eff, Facts: log.Facts()})
	}
	if len(suites) > 0 && len(order) == 0 {
		return res, fmt.Errorf("no run of suite %v in the log", suites)
	}
	return res, nil
}

// ErrNotInSuite is a run whose case or treatment the suite file given in
// place of the store's blobs does not hold as it ran.
var ErrNotInSuite = errors.New("not in the suite file as it ran")
