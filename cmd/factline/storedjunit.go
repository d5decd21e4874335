package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
)

// writeStoredJUnit writes to w the JUnit file of the stored report blob
// whose bytes spool holds, its test cases counted (counts) as the blob
// was first read: its rows are read again from spool one at a time and
// written as they are read, never held. A failure says its counted
// grade's first veto, which the stored JSON leaves out: it is read from
// the run's facts the report folded (firstVetoInLog), one run's facts
// at a time.
func writeStoredJUnit(ctx context.Context, b *bus.Bus, w io.Writer, suite string, blob storedBlob, counts measure.JUnitCounts, spool *os.File) error {
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("the spooled report: %w", err)
	}
	jw := measure.NewJUnitWriter(w, suite, counts, firstVetoInLog(ctx, b, suite, blob.through))
	// A failed case keeps its error, which Close returns.
	if _, err := measure.ReadJSONRows(spool, func(a *measure.AttemptRow) { jw.Case(a) }); err != nil {
		return fmt.Errorf("the spooled report: %w", err)
	}
	return jw.Close()
}

// firstVetoInLog returns the lookup of a failed attempt's first veto in
// the log: its run's facts through the sequence through (a regrade after
// the report is not the grade it counted), read with the report's rule
// for the grade it counts.
func firstVetoInLog(ctx context.Context, b *bus.Bus, suite string, through uint64) func(*measure.AttemptRow) (*events.GradeVeto, error) {
	return func(a *measure.AttemptRow) (*events.GradeVeto, error) {
		log, err := b.LoadRun(ctx, suite, a.Run)
		if err != nil {
			return nil, err
		}
		facts := make([]events.Fact, 0, len(log.Records))
		for _, rec := range log.Records {
			if rec.Seq <= through {
				facts = append(facts, rec.Fact)
			}
		}
		return measure.FirstVetoOf(suite, a.Run, facts), nil
	}
}
