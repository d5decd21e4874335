package measure

import "github.com/factline/factline/events"

// Tally is a suite's running count of its planned attempts, counted as the
// report counts them: Graded is passed + failed of attempts whose grade
// counts (never an excluded run's grade, a pending, invalid, abstained or
// disputed one), Passed only those graded passed.
type Tally struct {
	Started  int
	Ended    int
	Graded   int
	Passed   int
	Excluded int
	// Settled counts attempts no longer awaiting anything (ended and
	// graded, excluded, or terminally pending); disputed ones are not.
	Settled int
}

// Counter keeps a suite's Tally up to date as its facts arrive, one fact
// at a time, for a progress line that must say what the report will say.
// Each fact re-classifies only its own run (with the report's own rules,
// row), so following a suite costs O(facts), not O(facts × runs).
type Counter struct {
	log   *Log
	rows  map[string]AttemptRow
	tally Tally
	// cases and treatments of the submitted suite, once it is known.
	cases, treatments map[string]bool
}

// NewCounter returns the counter of a suite with no facts yet.
func NewCounter(suite string) *Counter {
	return &Counter{log: NewLog(suite), rows: map[string]AttemptRow{}}
}

// Apply folds one fact of the suite and re-counts the run it belongs to.
// Only planned runs count: those whose run.requested names a case and a
// treatment of the submitted suite and a trial within its trials (the
// meter requests nothing else).
func (c *Counter) Apply(f events.Fact) {
	c.log.Apply(f)
	sub := c.log.Submitted
	a := c.log.Runs[f.Run]
	if sub == nil || a == nil || a.Requested == nil || !c.planned(*sub, *a.Requested) {
		return
	}
	valid := sub.ValidOutcomes
	if len(valid) == 0 {
		valid = defaultValid
	}
	if _, superseded := c.log.RetriedBy[f.Run]; superseded {
		return // a retry replaced this run; its newest run counts
	}
	rq := a.Requested
	if old, ok := c.rows[rq.RetryOf]; ok && rq.RetryOf != "" {
		// The retry takes the place of the run it retries.
		c.tally.add(old, -1)
		delete(c.rows, rq.RetryOf)
	}
	now := row(Member{Case: rq.Case, Treatment: rq.Treatment, Trial: rq.Trial, Run: f.Run}, a, valid, sub.Required)
	if old, ok := c.rows[f.Run]; ok {
		c.tally.add(old, -1)
	}
	c.rows[f.Run] = now
	c.tally.add(now, 1)
}

// Tally returns the counts so far.
func (c *Counter) Tally() Tally { return c.tally }

func (t *Tally) add(r AttemptRow, n int) {
	if r.Started {
		t.Started += n
	}
	if r.Status != "" {
		t.Ended += n
	}
	switch r.Outcome {
	case OutcomePassed:
		t.Passed += n
		t.Graded += n
	case OutcomeFailed:
		t.Graded += n
	case OutcomeExcluded:
		t.Excluded += n
	}
	if r.Outcome != OutcomeAwaiting && r.Outcome != OutcomeDisputed {
		t.Settled += n
	}
}

func (c *Counter) planned(s events.SuiteSubmitted, r events.RunRequested) bool {
	if c.cases == nil {
		c.cases, c.treatments = map[string]bool{}, map[string]bool{}
		for _, x := range s.Cases {
			c.cases[x.ID] = true
		}
		for _, x := range s.Treatments {
			c.treatments[x.ID] = true
		}
	}
	return r.Trial >= 1 && r.Trial <= s.Trials && c.cases[r.Case] && c.treatments[r.Treatment]
}
