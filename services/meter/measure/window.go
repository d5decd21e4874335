package measure

// DefaultWindow is how many planned attempts a suite has requested beyond
// those ended, unless the meter is told otherwise: a few times the runs
// a fleet of a few hundred runners drives at once, so that no runner
// waits for a request, while the log and the runners' consumer hold the
// runs in flight, not the suite's every run (docs/suite.md#request-window).
const DefaultWindow = 1024

// Member is planned attempt i (from 0) of the suite, in Members' order,
// named without listing the ones before it. i must be below the suite's
// Size, and the suite applied.
func (c *Counter) Member(i uint64) Member {
	pairs := uint64(len(c.roster.prefix))
	return c.roster.member(int(i%pairs), uint32(i/pairs)+1)
}

// requestedSet holds which planned attempts have a run.requested under
// their own run ID, and the first that has none (every one before it
// has): a bit per attempt for any suite the bounds allow, a map of those
// set for one past them.
type requestedSet struct {
	bits   []uint64
	sparse map[uint64]bool
	n      uint64 // how many are set
	first  uint64 // the lowest not set
}

func newRequestedSet(size uint64) requestedSet {
	if size <= maxDense {
		return requestedSet{bits: make([]uint64, (size+63)/64)}
	}
	return requestedSet{sparse: map[uint64]bool{}}
}

func (r *requestedSet) has(i uint64) bool {
	if r.sparse != nil {
		return r.sparse[i]
	}
	return i/64 < uint64(len(r.bits)) && r.bits[i/64]&(1<<(i%64)) != 0
}

func (r *requestedSet) set(i uint64) {
	if r.has(i) {
		return
	}
	r.n++
	if r.sparse != nil {
		r.sparse[i] = true
	} else {
		r.bits[i/64] |= 1 << (i % 64)
	}
	for r.has(r.first) {
		r.first++
	}
}

// markRequested records that run has a run.requested: the planned
// attempts whose run ID it is are requested, whatever the request says
// (the meter's next request of them would be refused as a duplicate:
// the run's subject holds one).
func (c *Counter) markRequested(run string) {
	for _, i := range c.roster.members(run) {
		c.requested.set(uint64(i))
	}
}

// Requested is how many planned attempts have been requested under their
// own run IDs (a retry's run is not one).
func (c *Counter) Requested() uint64 { return c.requested.n }

// IsRequested says whether planned attempt i (Members' order, from 0)
// has been requested.
func (c *Counter) IsRequested(i uint64) bool {
	return c.sub != nil && i < Size(*c.sub) && c.requested.has(i)
}

// ToRequest returns the planned attempts [from, to) (Members' order, from
// 0) the suite should request now so that, counting what the facts
// applied so far say, no more than window attempts are requested and not
// ended: the first attempts not requested yet, up to window beyond the
// attempts ended. Attempts in the range that are already requested (a
// log requested out of order) are the caller's to skip. Requesting
// never runs ahead of the facts: a meter that restarts, or two that run
// at once, each ask for the same attempts, which the log then holds
// once.
func (c *Counter) ToRequest(window uint64) (from, to uint64) {
	if c.sub == nil {
		return 0, 0
	}
	n := Size(*c.sub)
	from = c.requested.first
	to = min(n, uint64(c.tally.Ended)+window)
	if to < from {
		to = from
	}
	return from, to
}
